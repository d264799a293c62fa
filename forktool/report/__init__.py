"""Renderers of result objects: text (rich), json, junit, github, markdown."""
