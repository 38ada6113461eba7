"""Renderings of one Report: terminal table, markdown, JSON."""
