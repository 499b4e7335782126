""" "Identical in content" for the report's figures (issue 28, round 5), the one definition the tests and
`bench_metrics.py` enforce:
- a PNG decodes (Pillow) to the same mode, size, pixels (numpy array equality) and metadata (dpi, text chunks);
- an SVG has the same elements in the same order, the same attributes and the same text, where numbers (path
  coordinates, positions, sizes) may differ by at most 0.01 (px, pt: the SVG's own units) and ids are compared
  by their place (matplotlib names clip paths and markers by a hash of their coordinates; each id is compared
  as its order of first appearance in the file, in its definition and in every reference to it).
Bytes may differ otherwise (compression, number formatting that is the same value within the tolerance)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

COORDINATE_TOLERANCE = 0.01
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def png_difference(a: Path, b: Path) -> str | None:
    """None when both PNGs decode to the same pixels and metadata, else what differs."""
    from PIL import Image

    with Image.open(a) as first, Image.open(b) as second:
        if (first.mode, first.size) != (second.mode, second.size):
            return f"{a.name}: mode/size {first.mode} {first.size} vs {second.mode} {second.size}"
        if first.info != second.info:
            return f"{a.name}: metadata {first.info} vs {second.info}"
        pixels_a, pixels_b = np.asarray(first), np.asarray(second)
    if not np.array_equal(pixels_a, pixels_b):
        return f"{a.name}: {int(np.any(pixels_a != pixels_b, axis=-1).sum())} pixels differ"
    return None


def svg_difference(a: Path, b: Path, tolerance: float = COORDINATE_TOLERANCE) -> str | None:
    """None when both SVGs hold the same elements, attributes and text within `tolerance`, else the first
    difference; see the module's docstring."""
    first, second = ET.parse(a).getroot(), ET.parse(b).getroot()
    ids_a, ids_b = _id_places(first), _id_places(second)
    elements_a, elements_b = list(first.iter()), list(second.iter())
    if len(elements_a) != len(elements_b):
        return f"{a.name}: {len(elements_a)} elements vs {len(elements_b)}"
    for n, (x, y) in enumerate(zip(elements_a, elements_b)):
        if x.tag != y.tag or sorted(x.attrib) != sorted(y.attrib):
            return f"{a.name}: element {n}: <{x.tag} {sorted(x.attrib)}> vs <{y.tag} {sorted(y.attrib)}>"
        pairs = [(f"@{key}", x.attrib[key], y.attrib[key]) for key in x.attrib]
        pairs += [("text", x.text or "", y.text or ""), ("tail", x.tail or "", y.tail or "")]
        for what, value_a, value_b in pairs:
            difference = _value_difference(value_a, value_b, ids_a, ids_b, tolerance)
            if difference:
                return f"{a.name}: element {n} <{x.tag} id={x.get('id')}> {what}: {difference}"
    return None


def largest_coordinate_difference(a: Path, b: Path) -> float:
    """The largest difference between numbers in the same place of two SVGs of the same structure (inf otherwise):
    how far apart they are when `svg_difference` says they are not identical in content."""
    first, second = ET.parse(a).getroot(), ET.parse(b).getroot()
    ids_a, ids_b = _id_places(first), _id_places(second)
    largest = 0.0
    for x, y in zip(first.iter(), second.iter(), strict=False):
        for value_a, value_b in [(x.attrib.get(k, ""), y.attrib.get(k, "")) for k in x.attrib] + [(x.text, y.text)]:
            numbers_a = _NUMBER.findall(_ids_placed(value_a or "", ids_a))
            numbers_b = _NUMBER.findall(_ids_placed(value_b or "", ids_b))
            if len(numbers_a) != len(numbers_b):
                return float("inf")
            for p, q in zip(numbers_a, numbers_b):
                largest = max(largest, abs(float(p) - float(q)))
    return largest


def _id_places(root: ET.Element) -> dict[str, str]:
    """Each id of the file by the order it is defined in."""
    return {element.get("id"): f"#id{n}" for n, element in enumerate(e for e in root.iter() if e.get("id"))}


def _value_difference(a: str, b: str, ids_a: dict, ids_b: dict, tolerance: float) -> str | None:
    a, b = _ids_placed(a, ids_a), _ids_placed(b, ids_b)
    words_a, words_b = _NUMBER.split(a), _NUMBER.split(b)
    if words_a != words_b:
        return f"{a[:80]!r} vs {b[:80]!r}"
    for p, q in zip(_NUMBER.findall(a), _NUMBER.findall(b)):
        if abs(float(p) - float(q)) > tolerance:
            return f"{p} vs {q} (tolerance {tolerance})"
    return None


def _ids_placed(value: str, ids: dict[str, str]) -> str:
    """`value` with each id (whole, or as `#id` / `url(#id)`) replaced by its place."""
    if value in ids:
        return ids[value]
    return re.sub(r"#([A-Za-z_][\w.-]*)", lambda m: ids.get(m.group(1), m.group(0)), value)


def report_figure_differences(new: Path, old: Path) -> list[str]:
    """Each figure file of two report folders that is not identical in content (or is missing on one side)."""
    problems = []
    names = sorted({p.name for p in (*new.glob("*.png"), *new.glob("*.svg"), *old.glob("*.png"), *old.glob("*.svg"))})
    for name in names:
        if not (new / name).exists() or not (old / name).exists():
            problems.append(f"{name}: only in {'the old' if (old / name).exists() else 'the new'} folder")
            continue
        compare = png_difference if name.endswith(".png") else svg_difference
        difference = compare(new / name, old / name)
        if difference:
            problems.append(difference)
    return problems


def png_pin(path: Path) -> dict:
    """What of a PNG `png_difference` compares, small enough to pin in a test: mode, size, metadata and the
    sha256 of its decoded pixels."""
    import hashlib

    from PIL import Image

    with Image.open(path) as image:
        info = {key: list(value) if isinstance(value, tuple) else value for key, value in image.info.items()}
        pixels = hashlib.sha256(np.asarray(image).tobytes()).hexdigest()
        return {"mode": image.mode, "size": list(image.size), "info": info, "pixels_sha256": pixels}
