"""A class: a teacher's join link and secret teacher link, students under a nickname, their answers and
runs kept in a database (SQLite in the runs folder, or Postgres for several replicas), and the teacher's
report over them. Torch-free and gradio-free."""
