"""The demo: a throwaway upstream project and fork that ``forktool demo`` walks through."""

from forktool.demo.upstream import DemoUpstream, build_demo_upstream

__all__ = ["DemoUpstream", "build_demo_upstream"]
