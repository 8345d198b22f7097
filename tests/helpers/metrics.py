"""Reading /metrics as Prometheus does: the text format parsed by prometheus_client's own parser."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    """Every sample of a scrape, by its name and labels."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def families(text: str) -> dict[str, str]:
    """The scrape's metric families and their types (a counter's family drops `_total`)."""
    return {family.name: family.type for family in text_string_to_metric_families(text)}


def value(samples: Samples, name: str, **labels: str) -> float:
    """One sample's value; 0 when the scrape has no such series (a counter not counted yet)."""
    return samples.get((name, frozenset(labels.items())), 0.0)


def series(samples: Samples, name: str) -> dict[frozenset[tuple[str, str]], float]:
    """Every series of one sample name, by its labels."""
    return {labels: number for (sample, labels), number in samples.items() if sample == name}


def moved(before: Samples, after: Samples, name: str, **labels: str) -> float:
    """How much one series moved between two scrapes."""
    return value(after, name, **labels) - value(before, name, **labels)
