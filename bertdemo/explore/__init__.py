"""The pure logic of each inspection tab: text + model in, small dataclasses out. No gradio."""
