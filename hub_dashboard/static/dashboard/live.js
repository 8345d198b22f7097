// Live regions. Each [data-live] region is re-rendered from the server (?fragment=<name>) when an
// event of the current network concerns it; where the event names one agent or one task, only that
// card or row is fetched (&only=<key>) with the region's summary tiles. Every swap goes through
// swap(), which never discards what the operator is editing. The socket starts from where the
// page's render stood (body[data-after]) and resumes from the last frame after a drop, so its
// first frame refreshes nothing unless something happened in between.

// The network switcher submits on change (here, not inline: the pages' CSP allows no inline script).
for (const select of document.querySelectorAll("form.switcher select")) {
  select.addEventListener("change", () => select.form.submit());
}

(() => {
  const regions = () => [...document.querySelectorAll("[data-live]")];
  if (!regions().length) return;
  const network = document.body.dataset.network;
  const badge = document.getElementById("live");
  const ALL = "*";
  const BURST = 10; // more keys than this in one batch: one region fetch is cheaper
  const positions = {};
  for (const item of (document.body.dataset.after || "").split(",")) {
    const [id, seq] = item.split(":");
    if (id && /^[0-9]+$/.test(seq || "")) positions[id] = Number(seq);
  }
  let pending = new Map(); // region name -> Set of keys, or ALL
  let timer = null, delay = 500, busy = Promise.resolve();

  // ---- The one swap mechanism ------------------------------------------------------------------

  // What the operator is editing: the focused control, or one whose value differs from how the
  // server rendered it. Its whole form is kept (the node itself: value, focus, caret, any open
  // confirmation) in place of the form's fresh twin.
  function edited(el) {
    if (el.type === "hidden" || el.type === "submit" || el.type === "button") return false;
    if (el.tagName === "SELECT") {
      const options = [...el.options];
      if (el.multiple) return options.some((o) => o.selected !== o.defaultSelected);
      let shown = options.findIndex((o) => o.defaultSelected);
      if (shown < 0) shown = options.findIndex((o) => !o.disabled);
      return el.selectedIndex !== shown;
    }
    if (el.type === "checkbox" || el.type === "radio") return el.checked !== el.defaultChecked;
    return el.value !== el.defaultValue;
  }

  // A node's identity across renders: tag, form action, name, and its rank among its like in root.
  function identity(node) {
    return `${node.tagName}|${node.getAttribute("action") || ""}|${node.getAttribute("name") || ""}|${node.id || ""}`;
  }
  function twinOf(node, oldRoot, freshRoot) {
    const id = identity(node);
    const alike = (root) => [...root.querySelectorAll(node.tagName)].filter((n) => identity(n) === id);
    return alike(freshRoot)[alike(oldRoot).indexOf(node)] || null;
  }

  // Replace target (an element) by fresh (an element or fragment), or, with inner, target's
  // children by fresh; carrying over edited forms, open <details> and focus.
  function swap(target, fresh, inner = false) {
    const active = target.contains(document.activeElement) ? document.activeElement : null;
    let caret = null;
    try { caret = active && active.selectionStart != null ? [active.selectionStart, active.selectionEnd] : null; } catch { caret = null; }
    const kept = new Set();
    for (const el of target.querySelectorAll("input, select, textarea, button")) {
      if (el === active || (el.tagName !== "BUTTON" && edited(el))) kept.add(el.form && target.contains(el.form) ? el.form : el);
    }
    const root = target;
    const freshRoot = fresh instanceof DocumentFragment ? fresh : wrap(fresh);
    for (const details of root.querySelectorAll("details")) {
      const twin = twinOf(details, root, freshRoot);
      if (twin) twin.open = details.open;
    }
    for (const node of kept) {
      if ([...kept].some((other) => other !== node && other.contains(node))) continue;
      const twin = twinOf(node, root, freshRoot);
      if (twin) twin.replaceWith(node); // the operator's node, as they left it
    }
    const flashes = versions(target);
    if (inner) target.replaceChildren(...freshRoot.childNodes);
    else target.replaceWith(...freshRoot.childNodes);
    if (active && active.isConnected && document.activeElement !== active) {
      active.focus({ preventScroll: true });
      if (caret) try { active.setSelectionRange(...caret); } catch { /* not a text control */ }
    }
    document.body.dataset.liveSwaps = String(Number(document.body.dataset.liveSwaps || 0) + 1);
    return flashes;
  }

  function wrap(element) {
    const fragment = document.createDocumentFragment();
    fragment.append(element);
    return fragment;
  }

  // Highlight what is new or changed: call the returned function on the swapped-in elements.
  function versions(root) {
    const before = new Map();
    for (const el of [root, ...root.querySelectorAll("[data-key]")]) {
      if (el.dataset && el.dataset.key) before.set(el.dataset.key, el.dataset.version || "");
    }
    return (elements) => {
      for (const top of elements) {
        for (const el of [top, ...top.querySelectorAll("[data-key]")]) {
          if (el.dataset && el.dataset.key && before.get(el.dataset.key) !== (el.dataset.version || "")) el.classList.add("flash");
        }
      }
    };
  }

  // ---- Fetching ---------------------------------------------------------------------------------

  async function fetchFragment(name, only) {
    const url = new URL(location.href);
    url.searchParams.set("fragment", name);
    if (only) url.searchParams.set("only", only);
    const reply = await fetch(url, { headers: { "X-Requested-With": "fetch" }, credentials: "same-origin" });
    if (!reply.ok) return null;
    const template = document.createElement("template");
    template.innerHTML = await reply.text();
    return template.content;
  }

  async function refreshRegion(region) {
    const fresh = await fetchFragment(region.dataset.live);
    if (!fresh || !region.isConnected) return;
    // A fragment that is the region itself (the nav's count badges) replaces it: swapped in as its
    // children, it would nest a second region of the same name inside the first.
    const top = fresh.children.length === 1 && fresh.firstElementChild.dataset.live === region.dataset.live
      ? fresh.firstElementChild : null;
    const flash = swap(region, fresh, !top);
    flash(top ? [top] : [...region.children]);
  }

  // One card's or row's update: the summary parts and the key's elements; anything the page does
  // not hold yet (a new agent, a task newly matching the filter) means a region refresh.
  async function refreshKey(region, key) {
    const fresh = await fetchFragment(region.dataset.live, key);
    if (!fresh || !region.isConnected) return;
    const items = [...fresh.querySelectorAll(":scope > [data-part], [data-key]:not([data-key] [data-key])")];
    const present = (el) => region.querySelector(`[data-key="${CSS.escape(el.dataset.key)}"]`);
    if (items.some((el) => el.dataset.key && !present(el))) return refreshRegion(region);
    const returned = new Set(items.map((el) => el.dataset.key).filter(Boolean));
    const mine = region.dataset.live === "fleet"
      ? region.querySelectorAll(`[data-alias="${CSS.escape(key)}"]`)
      : region.querySelectorAll(`[data-key="${CSS.escape(key)}"]`);
    for (const gone of mine) if (!returned.has(gone.dataset.key)) gone.remove(); // no longer listed here
    for (const el of items) {
      const old = el.dataset.part
        ? region.querySelector(`[data-part="${CSS.escape(el.dataset.part)}"]`)
        : present(el);
      if (!old) continue;
      const flash = swap(old, el);
      flash([el]);
    }
  }

  async function flush() {
    const batch = pending;
    pending = new Map();
    for (const region of regions()) {
      const keys = batch.get(region.dataset.live);
      if (!keys) continue;
      if (keys === ALL || keys.size > BURST) await refreshRegion(region);
      else for (const key of keys) await refreshKey(region, key);
    }
  }

  function want(name, key) {
    const keys = pending.get(name);
    if (key == null || keys === ALL) pending.set(name, ALL);
    else pending.set(name, (keys || new Set()).add(key));
  }

  function soon() { // coalesce bursts of events into one batch; one batch at a time
    clearTimeout(timer);
    timer = setTimeout(() => { busy = busy.then(flush, flush); }, 150);
  }

  // Which regions an event concerns, and by which key: each event type declares the regions it
  // touches (its app's events.py); the page carries them (body[data-live-routes]). A touch names
  // payload fields whose values key the region's cards or rows (keys; audience: the addressees),
  // else the whole region; it may hold only when a field names the region's subject (the task or
  // channel the page shows) or has one of the listed values (when).
  const routes = JSON.parse(document.body.dataset.liveRoutes || "{}");
  const routed = new Set(Object.values(routes).flat().map((touch) => touch.region));
  const named = (value) => (Array.isArray(value) ? value : [value]).filter(Boolean);

  function applies(touch, p, region) {
    if (touch.when && !Object.entries(touch.when).some(([field, values]) => values.includes(p[field]))) return false;
    const subject = region.dataset.subject;
    return !touch.subject || Boolean(subject && touch.subject.some((field) => p[field] === subject));
  }

  function route(frame) {
    const p = frame.payload || {};
    const touches = routes[frame.type] || [];
    for (const region of regions()) {
      const name = region.dataset.live;
      if (!routed.has(name)) { want(name); continue; } // a region no event declares: any news may change it
      for (const touch of touches) {
        if (touch.region !== name || !applies(touch, p, region)) continue;
        if (!touch.keys && !touch.audience) { want(name); continue; }
        const keys = (touch.keys || []).flatMap((field) => named(p[field]));
        for (const key of touch.audience ? [...keys, ...named(frame.to)] : keys) want(name, key);
      }
    }
    if (pending.size) soon();
  }

  // ---- The socket -------------------------------------------------------------------------------

  function connect() {
    const after = Object.entries(positions).map(([id, seq]) => `${id}:${seq}`).join(",");
    const query = after ? `?after=${encodeURIComponent(after)}` : "";
    const socket = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws/dashboard${query}`);
    socket.onopen = () => {
      delay = 500;
      if (badge) { badge.classList.add("on"); badge.textContent = "● live"; badge.title = "Live: changes appear as they happen"; }
    };
    socket.onmessage = (message) => {
      const frame = JSON.parse(message.data);
      if (frame.type === "hello") {
        // Networks the page had no position for start where the socket starts.
        for (const [id, seq] of Object.entries(frame.positions || {})) if (!(id in positions)) positions[id] = seq;
        return;
      }
      if (frame.id != null && frame.network_id) positions[frame.network_id] = Math.max(positions[frame.network_id] || 0, frame.id);
      if (!network || frame.network_id === network) route(frame);
    };
    socket.onclose = () => {
      if (badge) { badge.classList.remove("on"); badge.textContent = "● reconnecting"; badge.title = "Live updates paused: reconnecting"; }
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, 10000);
    };
  }
  connect();
})();
