"""Third-party CouchDB clients from PyPI doing their ordinary calls against the gateway:
couchdb-python 1.2 (`import couchdb`) and pycouchdb 1.17."""
import couchdb
import pycouchdb
import pytest

from conftest import ROOT


def url_with(user, password):
    return ROOT.replace("http://", f"http://{user}:{password}@")


def test_couchdb_python_ordinary_calls(db):
    db.user("alice", password="secret")
    server = couchdb.Server(url_with("alice", "secret"))
    assert server.version() == "3.3.3"
    assert db.name in server
    database = server[db.name]
    assert database.info()["doc_count"] == 0

    doc_id, rev = database.save({"_id": "invoice-1", "total": 1200, "channels": ["east"]})
    assert rev.startswith("1-")
    doc = database["invoice-1"]
    assert doc["total"] == 1200
    doc["total"] = 1300
    database.save(doc)
    assert database["invoice-1"]["total"] == 1300
    assert database["invoice-1"].rev.startswith("2-")

    # A stale revision is a conflict, as in CouchDB.
    stale = dict(doc, _rev=rev)
    with pytest.raises(couchdb.http.ResourceConflict):
        database.save(stale)

    new_id, _ = database.save({"kind": "no id"})  # POST /db: the gateway picks the id
    assert new_id in database

    database.put_attachment(database["invoice-1"], b"scan bytes", filename="scan.txt", content_type="text/plain")
    assert database.get_attachment("invoice-1", "scan.txt").read() == b"scan bytes"

    results = database.update([{"_id": "b1", "n": 1}, {"_id": "b2", "n": 2}])
    assert all(ok for ok, _, _ in results)
    assert sorted(row.id for row in database.view("_all_docs")) == sorted(["invoice-1", new_id, "b1", "b2"])
    assert [row.id for row in database.view("_all_docs", keys=["b2", "b1"])] == ["b2", "b1"]
    assert len(database) == 4

    changes = database.changes(since=0)
    assert {c["id"] for c in changes["results"]} == {"invoice-1", new_id, "b1", "b2"}
    feed = list(database.changes(feed="continuous", since=0, timeout=200, include_docs=True))
    assert any(c.get("doc", {}).get("n") == 2 for c in feed if "doc" in c)
    assert "last_seq" in feed[-1]

    database.delete(database["b1"])
    assert "b1" not in database
    with pytest.raises(couchdb.http.ResourceNotFound):
        database["b1"]

    database["_local/checkpoint"] = {"seq": 5}
    assert database["_local/checkpoint"]["seq"] == 5
    assert len(server.uuids(3)) == 3


def test_couchdb_python_sees_only_its_channels(db):
    db.user("admin", password="a")
    db.user("east", password="e", read="east", write="east")
    admin = couchdb.Server(url_with("admin", "a"))[db.name]
    admin.save({"_id": "e1", "channels": ["east"]})
    admin.save({"_id": "w1", "channels": ["west"]})
    east = couchdb.Server(url_with("east", "e"))[db.name]
    assert [row.id for row in east.view("_all_docs")] == ["e1"]
    assert east.get("w1") is None and east.get("nothing") is None
    with pytest.raises(couchdb.http.Unauthorized):
        couchdb.Server(url_with("east", "wrong"))[db.name].info()
    with pytest.raises(couchdb.http.Forbidden):
        east.save({"_id": "w2", "channels": ["west"]})


def test_couchdb_python_session_login(db):
    db.user("carol", password="pw")
    server = couchdb.Server(ROOT)
    token = server.login("carol", "pw")
    assert token
    assert server.verify_token(token)
    # The cookie authenticates requests to the user's database.
    import requests
    r = requests.get(f"{ROOT}/{db.name}/", cookies={"AuthSession": token}, timeout=30)
    assert r.status_code == 200 and r.json()["db_name"] == db.name
    server.logout(token)
    r = requests.get(f"{ROOT}/{db.name}/", cookies={"AuthSession": token}, timeout=30)
    assert r.status_code == 401


def test_pycouchdb_ordinary_calls(db):
    db.user("bob", password="pw")
    server = pycouchdb.Server(url_with("bob", "pw") + "/")
    assert server.info()["couchdb"] == "Welcome"
    database = server.database(db.name)
    doc = database.save({"_id": "p1", "name": "first"})
    assert doc["_rev"].startswith("1-")
    doc["name"] = "second"
    doc = database.save(doc)
    assert database.get("p1")["name"] == "second"
    with pytest.raises(pycouchdb.exceptions.Conflict):
        database.save({"_id": "p1", "name": "again"})
    docs = database.save_bulk([{"_id": "p2"}, {"_id": "p3"}])
    assert all(d["_rev"].startswith("1-") for d in docs)
    assert sorted(row["id"] for row in database.all(as_list=True)) == ["p1", "p2", "p3"]
    doc = database.put_attachment(database.get("p2"), b"bytes!", filename="f.bin", content_type="application/octet-stream")
    assert database.get_attachment(doc, "f.bin") == b"bytes!"
    changes = database.changes_list()
    assert {c["id"] for c in changes[1]} == {"p1", "p2", "p3"}
    database.delete("p3")
    with pytest.raises(pycouchdb.exceptions.NotFound):
        database.get("p3")
    assert len(list(database.revisions("p1"))) >= 1
