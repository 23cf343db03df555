"""The options several commands share, as argparse parents (`parents=[...]`): one help
text each. Their actions are shared by every command built on them, so a command that
needs another default or help (`demo`'s --lake, `plot`'s) declares the option itself:
`set_defaults` would change it for all of them."""

from __future__ import annotations

import argparse
from pathlib import Path

SETTINGS = argparse.ArgumentParser(add_help=False)
SETTINGS.add_argument("--settings", type=Path, help="settings file (default: "
                      "$PROBCEP_SETTINGS, ./probcep.yaml, packaged)")
#: --settings and --lake: the commands that read a lake.
LAKE = argparse.ArgumentParser(add_help=False, parents=[SETTINGS])
LAKE.add_argument("--lake", type=Path, help="lake root (default: the settings')")
#: --settings, --lake and --registry: the commands that also read the patterns.
REGISTRY = argparse.ArgumentParser(add_help=False, parents=[LAKE])
REGISTRY.add_argument("--registry", type=Path,
                      help="patterns registry (default: the settings')")
