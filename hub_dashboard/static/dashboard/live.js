// Live regions: on any event of the current network, re-render each [data-live] region from the
// server (?fragment=<name>) and highlight what is new or changed. A dropped socket reconnects
// with backoff and then refreshes, so nothing stays stale.

// The network switcher submits on change (here, not inline: the pages' CSP allows no inline script).
for (const select of document.querySelectorAll("form.switcher select")) {
  select.addEventListener("change", () => select.form.submit());
}

(() => {
  const regions = () => document.querySelectorAll("[data-live]");
  if (!regions().length) return;
  const network = document.body.dataset.network;
  const badge = document.getElementById("live");
  let timer = null, delay = 500;

  const keys = (root) => new Map([...root.querySelectorAll("[data-key]")].map((el) => [el.dataset.key, el.dataset.version || ""]));

  async function refresh() {
    for (const region of regions()) {
      const url = new URL(location.href);
      url.searchParams.set("fragment", region.dataset.live);
      const reply = await fetch(url, { headers: { "X-Requested-With": "fetch" }, credentials: "same-origin" });
      if (!reply.ok) continue;
      const before = keys(region);
      region.innerHTML = await reply.text();
      for (const el of region.querySelectorAll("[data-key]")) {
        if (before.get(el.dataset.key) !== (el.dataset.version || "")) el.classList.add("flash");
      }
    }
  }

  function soon() {  // coalesce bursts of events into one refresh
    clearTimeout(timer);
    timer = setTimeout(refresh, 150);
  }

  function connect() {
    const socket = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws/dashboard`);
    socket.onopen = () => { delay = 500; badge && badge.classList.add("on"); soon(); };
    socket.onmessage = (message) => {
      const frame = JSON.parse(message.data);
      if (frame.type !== "hello" && (!network || frame.network_id === network)) soon();
    };
    socket.onclose = () => {
      badge && badge.classList.remove("on");
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, 10000);
    };
  }
  connect();
})();
