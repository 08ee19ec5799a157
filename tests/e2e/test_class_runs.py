"""A class member's runs reach their class, through the launched app: on a public server two members behind one school
address start runs through the API with their member token, each recorded under their own nickname, while a stranger
who knows a member's id but not the token starts a run that is recorded in no class. (A student who joined in the
browser starts a run from the Pretrain tab and the teacher link draws it: tests/e2e/test_pretrain_browser.py.)"""

from __future__ import annotations

from bertdemo.classroom.db import Database
from bertdemo.classroom.report import class_report
from bertdemo.classroom.store import ClassStore
from bertdemo.traffic import MEMBER_HEADER

from .api import RUN, wait_ended

SCHOOL = "203.0.113.8"


def test_members_behind_one_address_start_runs_recorded_as_themselves(public_server):
    from gradio_client import Client

    store = ClassStore(Database.in_folder(public_server.runs))  # the server's own class database
    try:
        new = store.create_class("API class")
        ada, bob = store.join(new.join_code, "Ada"), store.join(new.join_code, "Bob")
        started = {}
        for name, token in (("Ada", ada.token), ("Bob", bob.token), ("stranger", f"{ada.member_id}.{'0' * 64}")):
            client = Client(public_server.url, verbose=False, headers={"x-forwarded-for": SCHOOL, MEMBER_HEADER: token})
            client.predict(RUN, f"owner-{name}", api_name="/start_run")
            started[name] = client.predict(api_name="/run_status")["run_id"]
            client.predict(f"owner-{name}", api_name="/stop_run")
            wait_ended(client)
        listed = sorted(class_report(store, new.teacher_key).runs)
        assert listed == [("Ada", started["Ada"], "pretrain"), ("Bob", started["Bob"], "pretrain")]
        for name, run_id in started.items():  # what the runs leave behind goes: each owner deletes theirs
            client.predict(run_id, f"owner-{name}", api_name="/delete_run")
    finally:
        store.db.close()
