"""YAML as probcep's files read it: a key named twice is an error (plain YAML keeps the
last silently), each mapping knows its keys' lines for messages, and `1e-3` is a number
(YAML 1.2; YAML 1.1 reads it as text)."""

from __future__ import annotations

import re

import yaml


class LineDict(dict):
    """A YAML mapping that knows the line (1-based) of each of its keys."""

    lines: dict


def underflow(text: str, value: float) -> str | None:
    """Why `value`, read from the decimal `text`, is refused: a positive number that reads
    as the double 0 (`1e-400`); None when it is not one."""
    mantissa = re.split(r"[eE]", text.strip(), maxsplit=1)[0]
    if value == 0.0 and re.search(r"[1-9]", mantissa):
        return (f"{text} is below the smallest positive double (about 5e-324) and would "
                "read as 0; write 0 to mean 0")
    return None


#: The most values a document may hold once its aliases (`*name`) are expanded: nine
#: nested lists of nine aliases are 9^9 values of a few lines, which printing one in a
#: refusal took minutes and gigabytes to do.
MAX_VALUES = 100_000


def _expanded(node, sizes: dict) -> int:
    """How many values `node` holds with its aliases expanded (a shared node is counted
    at each use; each is sized once)."""
    if id(node) not in sizes:
        children = [n for pair in node.value for n in pair] \
            if isinstance(node, yaml.MappingNode) else \
            node.value if isinstance(node, yaml.SequenceNode) else []
        sizes[id(node)] = 1 + sum(_expanded(c, sizes) for c in children)
    return sizes[id(node)]


class UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a mapping that names a key twice (plain YAML keeps
    the last silently: a second entry of one name would replace the first unseen), and
    keeping each key's line for messages."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, list | dict):  # `? [a, b]`: no key of probcep's files
                raise yaml.constructor.ConstructorError(
                    None, None, "a key must be a name, not a list or mapping",
                    key_node.start_mark)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"{key!r} is named twice", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)

    def compose_document(self):
        node = super().compose_document()
        if node is not None and _expanded(node, {}) > MAX_VALUES:
            raise yaml.composer.ComposerError(
                None, None, f"the document holds more than {MAX_VALUES} values once its "
                "aliases (*name) are expanded", node.start_mark)
        return node

    def construct_yaml_float(self, node):
        """A float, refusing a positive decimal that reads as 0 (`threshold: 1e-400` would
        be θ = 0, every match; `alert_threshold: 1e-400` every group an alert)."""
        value = super().construct_yaml_float(node)
        problem = underflow(str(self.construct_scalar(node)), value)
        if problem:
            raise yaml.constructor.ConstructorError(None, None, problem, node.start_mark)
        return value

    def construct_located_mapping(self, node):
        data = LineDict()
        data.lines = {}
        yield data
        data.update(self.construct_mapping(node))
        data.lines = {self.construct_object(k): k.start_mark.line + 1 for k, _ in node.value}


UniqueKeyLoader.add_constructor("tag:yaml.org,2002:map",
                                UniqueKeyLoader.construct_located_mapping)
# YAML 1.1 reads `1e-3` (no dot) as text; a threshold written so is a number (YAML 1.2)
UniqueKeyLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+$"),
    list("-+0123456789"))
UniqueKeyLoader.add_constructor("tag:yaml.org,2002:float", UniqueKeyLoader.construct_yaml_float)
