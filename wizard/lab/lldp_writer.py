"""lldpcli's JSON and plain-text writers, reproduced: the neighbour tree is built with the same start/attr/data/end
calls lldpd's src/client/display.c makes, then cleaned and dumped the way src/client/json_writer.c does.

The cleanup is what gives lldpd's JSON its quirks (lldpd issue #236): a one-element array loses its brackets (one
interface is an object, several are a list of one-key objects), an object whose only key is "value" becomes that
string, and a "name" key is hoisted into a parent key ({"eth0": {...}}). "yes"/"on"/"no"/"off" attributes become
booleans. ``-f json0`` (lldpd's --enable-json0 variant) skips the cleanup.
"""

from __future__ import annotations

from dataclasses import dataclass, field

OBJECT, ARRAY, STRING, BOOL = "object", "array", "string", "bool"


@dataclass
class Element:
    tag: str
    key: str | None = None
    parent: Element | None = None
    children: list[Element] = field(default_factory=list)
    string: str = ""
    boolean: bool = False


class JsonWriter:
    """The writer interface of lldpcli (tag_start / tag_attr / tag_data / tag_end)."""

    def __init__(self, variant: int = 1) -> None:
        self.variant = variant
        self.root = Element(OBJECT)
        self.current = self.root

    def start(self, tag: str, descr: str = "") -> None:
        child = next((c for c in self.current.children if c.key == tag), None)
        if child is None:
            child = Element(ARRAY, tag, self.current)
            self.current.children.append(child)
        new = Element(OBJECT, None, child)
        child.children.append(new)
        self.current = new

    def attr(self, tag: str, descr: str, value: str | None) -> None:
        el = Element(STRING, tag, self.current)
        if value in ("yes", "on", "no", "off"):
            el.tag, el.boolean = BOOL, value in ("yes", "on")
        else:
            el.string = value or ""
        self.current.children.append(el)

    def data(self, value: str | None) -> None:
        self.current.children.append(Element(STRING, "value", self.current, string=value or ""))

    def end(self) -> None:
        parent = self.current.parent
        while parent is not None and parent.tag != OBJECT:
            parent = parent.parent
        if parent is None:
            raise RuntimeError("unbalanced tags")
        self.current = parent

    def datatag(self, tag: str, descr: str, value: str | None) -> None:
        if value is None:
            return
        self.start(tag, descr)
        self.data(value)
        self.end()

    def render(self) -> str:
        """The document as lldpcli prints it (json_dump, then the extra newline json_end adds)."""
        if self.variant != 0:
            _cleanup(self.root)
        return _dump(self.root, 0) + "\n\n"


def _replace(old: Element, new: Element) -> None:
    parent = old.parent
    assert parent is not None
    parent.children[parent.children.index(old)] = new
    new.parent = parent


def _cleanup(el: Element) -> None:
    if el.tag in (ARRAY, OBJECT) and len(el.children) == 1 and (el.tag == ARRAY or el.children[0].key == "value"):
        child = el.children[0]
        child.key = el.key
        _replace(el, child)
        _cleanup(child)
        return
    if el.tag == ARRAY:
        for child in list(el.children):
            _cleanup(child)
        return
    if el.tag == OBJECT:
        for child in list(el.children):
            _cleanup(child)
        name = next((c for c in el.children if c.key == "name" and c.tag == STRING), None)
        if name is not None and el.parent is not None:
            wrapper = Element(OBJECT, el.key)
            _replace(el, wrapper)
            el.children.remove(name)
            el.key = name.string
            el.parent = wrapper
            wrapper.children.append(el)


def _quote(s: str) -> str:
    out = []
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _dump(el: Element, indent: int) -> str:
    if el.tag == STRING:
        return _quote(el.string)
    if el.tag == BOOL:
        return "true" if el.boolean else "false"
    opening, closing = ("[", "]") if el.tag == ARRAY else ("{", "}")
    parts = []
    for child in el.children:
        key = f"{_quote(child.key or '')}: " if el.tag == OBJECT else ""
        parts.append(key + _dump(child, indent + 2))
    pad = " " * (indent + 2)
    return opening + "\n" + pad + f",\n{pad}".join(parts) + "\n" + " " * indent + closing
