"""Issue 24, "Rights, closed on every path": each test here failed before its fix."""
import base64

import requests

from conftest import ROOT


def seed_branches(admin_client):
    """Document d: 1-aa (east), then two branches: 2-ea (east, the winner) and 2-ab (west)."""
    r = admin_client.bulk_replicated([
        {"_id": "d", "_rev": "2-ea", "_revisions": {"start": 2, "ids": ["ea", "aa"]}, "channels": ["east"], "v": "east"},
        {"_id": "d", "_rev": "2-ab", "_revisions": {"start": 2, "ids": ["ab", "aa"]}, "channels": ["west"], "v": "west"},
    ])
    assert r.status_code == 201 and all("error" not in x for x in r.json()), r.text


def leaves(admin_client, doc_id):
    r = admin_client.get("_changes", params={"style": "all_docs"})
    for result in r.json()["results"]:
        if result["id"] == doc_id:
            return sorted(c["rev"] for c in result["changes"])
    return []


def test_overwriting_a_losing_branch_in_an_unwritable_channel_is_forbidden(db):
    admin = db.user("admin")
    east = db.user("east", read="east", write="east")
    seed_branches(admin)
    r = east.bulk_replicated([{"_id": "d", "_rev": "3-xx", "_revisions": {"start": 3, "ids": ["xx", "ab", "aa"]},
                              "channels": ["east"], "v": "taken over"}])
    assert r.status_code == 201
    assert r.json()[0].get("error") == "forbidden", r.text
    assert leaves(admin, "d") == ["2-ab", "2-ea"]


def test_deleting_a_losing_branch_in_an_unwritable_channel_is_forbidden(db):
    admin = db.user("admin")
    east = db.user("east", read="east", write="east")
    seed_branches(admin)
    r = east.bulk_replicated([{"_id": "d", "_rev": "3-dd", "_revisions": {"start": 3, "ids": ["dd", "ab", "aa"]},
                              "_deleted": True, "channels": ["east"]}])
    assert r.json()[0].get("error") == "forbidden", r.text
    assert leaves(admin, "d") == ["2-ab", "2-ea"]


def test_extending_ones_own_branch_still_works(db):
    admin = db.user("admin")
    east = db.user("east", read="east", write="east")
    seed_branches(admin)
    r = east.bulk_replicated([{"_id": "d", "_rev": "3-ee", "_revisions": {"start": 3, "ids": ["ee", "ea", "aa"]},
                              "channels": ["east"], "v": 3}])
    assert "error" not in r.json()[0], r.text
    assert leaves(admin, "d") == ["2-ab", "3-ee"]


def test_an_unreadable_document_answers_as_a_missing_one(db):
    admin = db.user("admin")
    east = db.user("east", read="east", write="east")
    r = admin.bulk_replicated([{"_id": "w1", "_rev": "1-bb", "channels": ["west"], "secret": 1}])
    assert "error" not in r.json()[0]
    for path in ["w1", "w1?rev=1-bb", "w1?revs=true"]:
        hidden, missing = east.get(path), east.get(path.replace("w1", "nothing").replace("1-bb", "1-cc"))
        assert hidden.status_code == missing.status_code == 404, (path, hidden.text)
        assert hidden.json() == missing.json(), (hidden.text, missing.text)
        assert "west" not in hidden.text
    r = east.post("_bulk_get?revs=true", {"docs": [{"id": "w1", "rev": "1-bb"}, {"id": "w2", "rev": "1-bb"}, {"id": "w1"}, {"id": "w2"}]})
    assert r.status_code == 200
    errors = [res["docs"][0].get("error") for res in r.json()["results"]]
    assert all(e is not None for e in errors), r.text
    assert "west" not in r.text and "forbidden" not in r.text
    assert {k: v for k, v in errors[0].items() if k != "id"} == {k: v for k, v in errors[1].items() if k != "id"}
    assert {k: v for k, v in errors[2].items() if k != "id"} == {k: v for k, v in errors[3].items() if k != "id"}


def test_revs_diff_needs_the_read_right(db):
    admin = db.user("admin")
    east = db.user("east", read="east", write="east")
    admin.bulk_replicated([{"_id": "w1", "_rev": "1-bb", "channels": ["west"]}, {"_id": "e1", "_rev": "1-aa", "channels": ["east"]}])
    r = east.post("_revs_diff", {"w1": ["1-bb"], "nothing": ["1-bb"], "e1": ["1-aa"]})
    assert r.status_code == 200
    assert r.json() == {"w1": {"missing": ["1-bb"]}, "nothing": {"missing": ["1-bb"]}}, r.text


def test_an_unknown_database_answers_as_a_known_one_with_wrong_credentials(db):
    db.user("admin", password="secret")
    known = requests.get(f"{ROOT}/{db.name}/", auth=("admin", "wrong"), timeout=30)
    unknown = requests.get(f"{ROOT}/nowhere{db.name}/", auth=("admin", "wrong"), timeout=30)
    assert known.status_code == unknown.status_code == 401
    assert known.json()["error"] == unknown.json()["error"] == "unauthorized"
    assert known.json()["reason"].replace(db.name, "X") == unknown.json()["reason"].replace("nowhere" + db.name, "X")
    anonymous = requests.get(f"{ROOT}/nowhere{db.name}/", timeout=30)
    assert anonymous.status_code == 401


def test_local_checkpoints_belong_to_their_user(db):
    alice = db.user("alice")
    mallory = db.user("mallory")
    r = alice.put("_local/cp", {"last": 5})
    assert r.status_code == 201
    assert mallory.get("_local/cp").status_code == 404
    r = mallory.put("_local/cp", {"last": 999})
    assert r.status_code == 201, r.text
    r = mallory.put("_local/cp", {"_rev": "0-1", "last": 998})
    assert r.status_code == 201
    assert alice.get("_local/cp").json()["last"] == 5
    assert mallory.get("_local/cp").json()["last"] == 998
