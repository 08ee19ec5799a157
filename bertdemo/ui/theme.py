"""The page's colours, in one place: gradio's Soft theme in indigo, with every text colour it draws at a
contrast of at least 4.5:1 (WCAG 2 AA for body text), and the few colour rules the theme's variables cannot
reach (the code panels' syntax colours), as CSS.

Soft draws labels, primary buttons and secondary text in shades that fall short of 4.5:1 (indigo-500 on
indigo-100: 3.6; white on indigo-500: 4.5 minus a hair; gray-400 on white: 2.5). The shades below measure,
on the backgrounds they are drawn on: indigo-700 on indigo-100 6.4, on white 7.9; white on indigo-600 6.3,
on indigo-700 7.9; gray-600 on white 7.6, on gray-50 7.2. ``tests/e2e/test_accessibility.py`` runs axe-core
on every tab and fails on any serious colour-contrast finding.
"""

from __future__ import annotations

import gradio as gr

THEME = gr.themes.Soft(primary_hue="indigo").set(
    # the label pill over a figure or a box, and a form field's title: indigo-700 on indigo-100
    block_label_text_color="*primary_700",
    block_title_text_color="*primary_700",
    # secondary text: info lines under a field, placeholders, the footer
    body_text_color_subdued="*neutral_600",
    input_placeholder_color="*neutral_600",
    # primary buttons (and a selected checkbox's label): white on indigo-600, indigo-700 under the pointer
    button_primary_background_fill="*primary_600",
    button_primary_background_fill_hover="*primary_700",
    checkbox_label_background_fill_selected="*primary_600",
    # the accent: the open tab's name and underline, on white: indigo-600 (6.3)
    color_accent="*primary_600",
)

# gradio's Code component draws its syntax in CodeMirror's Nord light colours (numbers #88c0d0 on white: 2.0,
# strings #d08770: 2.8) under generated class names that change with every build: a panel's code is drawn
# in the editor's own text colour (#2e3440 on white: 11.8) instead. Its own markup: checked on gradio 6.31.
CSS = """
.cm-editor .cm-line span { color: inherit !important; }
"""
