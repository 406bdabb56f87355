"""Accounts, users and QOS through the API: what sacctmgr changes and what sbatch then gets.

The harness controller is configured with the defaults: account ``default``,
QOS ``normal``; alice and bob are ordinary users, root an administrator.
"""

from __future__ import annotations

from controller.store.models import AssocRow, UserRow
from slurmlite import errors
from tests.api.conftest import ALICE, BOB, ROOT

BAD_ACCOUNT = "Invalid account or account/partition combination specified"
BAD_QOS = "Invalid qos specification"


def admin_post(h, path: str, body: dict) -> dict:
    h.as_user(ROOT)
    try:
        r = h.client.post(path, json=body)
        assert r.status_code == 200, r.text
        return r.json()
    finally:
        h.as_user(ALICE)


def lab(h) -> None:
    """root -> vision (alice, bob), nlp (bob); QOS high exists."""
    admin_post(h, "/v1/accounts/add", {"names": ["vision", "nlp"], "changes": {"fairshare": 3}})
    admin_post(h, "/v1/users/add", {"names": ["alice"], "accounts": ["vision"]})
    admin_post(h, "/v1/users/add", {"names": ["bob"], "accounts": ["nlp", "vision"]})
    admin_post(h, "/v1/qos/add", {"names": ["high"], "changes": {"priority": 100}})


def test_bootstrap_makes_root_default_account_and_normal_qos(harness):
    dump = harness.client.get("/v1/assocs").json()
    accounts = {(a["account"], a["user"]): a for a in dump["assocs"]}
    assert accounts[("root", "")]["parent"] is None
    assert accounts[("default", "")]["parent"] == "root"
    assert [q["name"] for q in dump["qos"]] == ["normal"]
    assert dump["cluster"] == "anchor"
    harness.ctl.accounts.bootstrap()  # idempotent: nothing doubles, nothing fails
    assert len(harness.client.get("/v1/assocs").json()["assocs"]) == 2


def test_a_user_without_association_gets_the_default_account_and_is_recorded(harness):
    job = harness.submit()
    assert harness.job(job["job_id"])["account"] == "default"
    assert harness.job(job["job_id"])["qos"] == "normal"
    with harness.ctl.db.read() as s:  # fair-share sees alice from her first job on
        assert s.get(AssocRow, ("default", "alice")).shares == 1
        assert s.get(UserRow, "alice").default_account == "default"


def test_bad_account_and_qos_give_slurms_texts(harness):
    r = harness.post_job(account="nosuchacct")
    assert r.status_code == 400 and r.json()["error"] == BAD_ACCOUNT
    r = harness.post_job(qos="nosuch")
    assert r.status_code == 400 and r.json()["error"] == BAD_QOS
    assert r.json()["errno"] == errors.ESLURM_INVALID_QOS


def test_default_account_and_membership(harness):
    lab(harness)
    harness.as_user(BOB)  # bob's default is his first account: nlp
    assert harness.job(harness.submit()["job_id"])["account"] == "nlp"
    assert harness.job(harness.submit(account="vision")["job_id"])["account"] == "vision"
    harness.as_user(ALICE)  # alice is not in nlp, nor (any more) free to use the default
    assert harness.post_job(account="nlp").json()["error"] == BAD_ACCOUNT
    assert harness.post_job(account="default").json()["error"] == BAD_ACCOUNT
    assert harness.job(harness.submit()["job_id"])["account"] == "vision"


def test_qos_must_be_allowed_for_the_association(harness):
    lab(harness)
    assert harness.post_job(qos="high").json()["error"] == BAD_QOS  # exists, not allowed
    admin_post(harness, "/v1/users/modify", {"names": ["alice"], "changes": {"qos_add": ["high"]}})
    assert harness.job(harness.submit(qos="high")["job_id"])["qos"] == "high"
    admin_post(
        harness, "/v1/users/modify", {"names": ["alice"], "changes": {"default_qos": "high"}}
    )
    assert harness.job(harness.submit()["job_id"])["qos"] == "high"


def test_modify_with_where_and_fairshare(harness):
    lab(harness)
    admin_post(
        harness,
        "/v1/users/modify",
        {"names": ["bob"], "accounts": ["vision"], "changes": {"fairshare": 10}},
    )
    shares = {
        (a["account"], a["user"]): a["shares"]
        for a in harness.client.get("/v1/assocs").json()["assocs"]
    }
    assert shares[("vision", "bob")] == 10 and shares[("nlp", "bob")] == 1
    assert shares[("vision", "")] == 3


def test_records_feed_fair_share(harness):
    lab(harness)
    with harness.ctl.db.read() as s:
        recs = {(r.account, r.user): r for r in harness.ctl.accounts.records(s)}
    assert recs[("vision", None)].parent == "root" and recs[("vision", None)].shares == 3
    assert recs[("vision", "alice")].user == "alice" and recs[("vision", "alice")].usage == 0.0


def test_qos_limits_are_stored_and_merged(harness):
    admin_post(
        harness,
        "/v1/qos/modify",
        {"names": ["normal"], "changes": {"max_tres_pu": "cpu=8", "max_wall": 120}},
    )
    admin_post(
        harness, "/v1/qos/modify", {"names": ["normal"], "changes": {"max_tres_pu": "gres/gpu=4"}}
    )
    [q] = harness.client.get("/v1/assocs").json()["qos"]
    assert q["max_tres_pu"] == "cpu=8,gres/gpu=4" and q["max_wall"] == 120


def test_non_admins_may_read_but_not_change(harness):
    assert harness.client.get("/v1/assocs").status_code == 200
    r = harness.client.post("/v1/accounts/add", json={"names": ["mine"]})
    assert r.status_code == 403
    assert r.json()["detail"] == "Your user doesn't have privilege to perform this action"
    assert "mine" not in {a["account"] for a in harness.client.get("/v1/assocs").json()["assocs"]}


def test_an_admin_level_user_may_change(harness):
    admin_post(
        harness,
        "/v1/users/add",
        {"names": ["alice"], "accounts": ["default"], "admin_level": "Administrator"},
    )
    assert harness.client.post("/v1/qos/add", json={"names": ["mine"]}).status_code == 200


def test_dry_run_changes_nothing(harness):
    ans = admin_post(harness, "/v1/accounts/add", {"names": ["vision"], "commit": False})
    assert ans["accounts"] == ["vision"]
    assert "vision" not in {a["account"] for a in harness.client.get("/v1/assocs").json()["assocs"]}


def test_refusals_are_4xx_with_sacctmgr_text(harness):
    harness.as_user(ROOT)
    c = harness.client
    r = c.post("/v1/accounts/add", json={"names": ["x"], "parent": "nosuch"})
    assert r.status_code == 400 and "Parent account 'nosuch' doesn't exist" in r.json()["detail"]
    r = c.post("/v1/users/add", json={"names": ["carol"], "accounts": ["nosuch"]})
    assert r.status_code == 400 and "This account 'nosuch' doesn't exist" in r.json()["detail"]
    assert c.post("/v1/accounts/delete", json={"names": ["root"]}).status_code == 400
    assert c.post("/v1/qos/delete", json={"names": ["normal"]}).status_code == 400
    r = c.post("/v1/qos/modify", json={"names": ["normal"], "changes": {"max_tres_pu": "gpu"}})
    assert r.status_code == 400
    c.post("/v1/users/add", json={"names": ["alice"], "accounts": ["default"]})
    r = c.post("/v1/users/modify", json={"names": ["alice"], "changes": {"admin_level": "god"}})
    assert r.status_code == 400 and "Invalid AdminLevel: god" in r.json()["detail"]
    r = c.post("/v1/users/modify", json={"names": ["alice"], "changes": {"default_account": "x"}})
    assert r.json()["errno"] == errors.ESLURM_INVALID_ACCOUNT
    for bad in ({"names": []}, {"names": ["a b"]}, {"names": ["x"], "bogus": 1},
                {"names": ["x"], "changes": {"fairshare": -5}}):  # fmt: skip
        assert c.post("/v1/accounts/add", json=bad).status_code == 422


def test_delete_rules(harness):
    lab(harness)
    harness.as_user(BOB)
    job = harness.submit(account="vision")["job_id"]
    harness.as_user(ROOT)
    c = harness.client
    # bob's pending job uses bob/vision: that association stays
    r = c.post("/v1/users/delete", json={"names": ["bob"], "accounts": ["vision"]})
    assert (
        r.json()["errno"] == errors.ESLURM_JOBS_RUNNING_ON_ASSOC and str(job) in r.json()["detail"]
    )
    # nlp is bob's default account and he keeps vision
    r = c.post("/v1/users/delete", json={"names": ["bob"], "accounts": ["nlp"]})
    assert r.json()["errno"] == errors.ESLURM_NO_REMOVE_DEFAULT_ACCOUNT
    # alice loses her only association: the user goes too
    assert c.post("/v1/users/delete", json={"names": ["alice"]}).json()["deleted"] == ["alice"]
    with harness.ctl.db.read() as s:
        assert s.get(UserRow, "alice") is None
