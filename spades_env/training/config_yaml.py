"""The training config's YAML reader: ``safe_yaml`` reads a config file's text as
``yaml.safe_load`` does, without aliases (an alias bomb), repeated keys (PyYAML keeps the last
silently) or YAML 1.1's base-60 numbers (``1:30`` stays a string), and ``parse_value`` reads a
command-line value the same way (``--lr 1e-4`` is a number).
"""

from __future__ import annotations

import yaml

from .config_fields import short_repr

__all__ = ["safe_yaml", "parse_value"]


class _StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses aliases (``*name``: an alias bomb expands a 1 KB file into
    gigabytes) and a key set twice in one mapping (PyYAML keeps the last silently), and reads
    YAML 1.1's base-60 numbers (``1:30``, read as 90 by PyYAML) as the strings written, so a
    field that takes a number refuses them."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, f"aliases (*{event.anchor}) are not allowed in a config: write the "
                            f"value out", event.start_mark)
        return super().compose_node(parent, index)

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key: the base class says so
                    break
                line = key_node.start_mark.line + 1
                if first is not None:
                    raise _DuplicateKey(f"field {short_repr(key)} is set twice (lines {first} and "
                                        f"{line})")
                seen[key] = line
        return super().construct_mapping(node, deep)

    def construct_yaml_int(self, node):
        value = self.construct_scalar(node)
        if ":" in value:  # YAML 1.1 base 60 (1:30 is 90): kept as written, a string
            return value
        return super().construct_yaml_int(node)

    def construct_yaml_float(self, node):
        value = self.construct_scalar(node)
        if ":" in value:  # base 60 too (1:30.5 is 90.5)
            return value
        return super().construct_yaml_float(node)


_StrictLoader.add_constructor("tag:yaml.org,2002:int", _StrictLoader.construct_yaml_int)
_StrictLoader.add_constructor("tag:yaml.org,2002:float", _StrictLoader.construct_yaml_float)


class _DuplicateKey(ValueError):
    pass


def safe_yaml(text: str):
    """Parse YAML text as a config does (``yaml.safe_load`` without aliases or repeated keys;
    base-60 numbers such as ``1:30`` are strings).

    Raises:
        ValueError: invalid YAML, an alias, a key set twice, or nesting too deep.
    """
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except _DuplicateKey as e:
        raise ValueError(str(e)) from None
    except yaml.YAMLError as e:
        raise ValueError(f"not valid YAML: {str(e)[:500]}") from None
    except RecursionError:
        raise ValueError("not valid YAML: nested too deeply") from None


def parse_value(text: str):
    """Parse a command-line value as a YAML scalar/list (``1e-4`` -> float, ``true`` -> bool).

    Raises:
        ValueError: text that is not valid YAML, or holds an alias or a key set twice.
    """
    try:
        v = safe_yaml(text)
    except ValueError as e:
        raise ValueError(f"cannot read the value {short_repr(text)}: "
                         f"{(str(e).splitlines() or [''])[0]}") from None
    # YAML 1.1 reads "1e-4" as a string; accept it as a float.
    if isinstance(v, str):
        try:
            return float(v) if any(c in v for c in ".eE") else v
        except ValueError:
            return v
    return v


