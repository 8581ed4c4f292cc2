"""CouchDB 3's HTTP API for documents and replication, as the gateway serves it (PROTOCOL.md),
with the user's channels holding on every path."""
import json
import threading
import time

import requests

from conftest import ROOT


def test_server_and_database_info(db):
    alice = db.user("alice")
    root = requests.get(ROOT + "/", timeout=30).json()
    assert root["couchdb"] == "Welcome" and root["version"].startswith("3.")
    info = alice.get("").json()
    assert info["db_name"] == db.name and info["doc_count"] == 0 and info["update_seq"] == 0
    assert requests.get(ROOT + "/_up", timeout=30).json() == {"status": "ok"}
    uuids = requests.get(ROOT + "/_uuids?count=5", timeout=30).json()["uuids"]
    assert len(set(uuids)) == 5
    assert alice.post("_ensure_full_commit", {}).status_code == 201
    r = requests.get(ROOT + "/_nothing", timeout=30)
    assert r.status_code == 404 and set(r.json()) == {"error", "reason"}


def test_document_crud_with_conflicts(db):
    alice = db.user("alice")
    r = alice.put("doc", {"v": 1})
    assert r.status_code == 201 and r.json()["ok"] is True
    rev1 = r.json()["rev"]
    assert r.headers["ETag"] == f'"{rev1}"'
    assert alice.put("doc", {"v": 9}).status_code == 409
    r = alice.put("doc", {"_rev": rev1, "v": 2})
    rev2 = r.json()["rev"]
    assert rev2.startswith("2-")
    assert alice.put("doc", {"_rev": rev1, "v": 3}).json() == {"error": "conflict", "reason": "Document update conflict."}
    got = alice.get("doc").json()
    assert got == {"_id": "doc", "_rev": rev2, "v": 2}
    assert alice.get("doc", params={"rev": rev1}).json()["v"] == 1
    assert alice.get("doc", params={"revs": "true"}).json()["_revisions"] == {"start": 2, "ids": [rev2[2:], rev1[2:]]}
    info = alice.get("doc", params={"revs_info": "true"}).json()["_revs_info"]
    assert [i["rev"] for i in info] == [rev2, rev1]
    r = alice.post("", {"made": "by POST"})
    assert r.status_code == 201 and len(r.json()["id"]) == 32
    assert alice.delete("doc").status_code == 409
    r = alice.delete("doc", params={"rev": rev2})
    assert r.status_code == 200 and r.json()["rev"].startswith("3-")
    assert alice.get("doc").json() == {"error": "not_found", "reason": "deleted"}
    # A deleted document is created again on top of its tombstone.
    r = alice.put("doc", {"v": "again"})
    assert r.status_code == 201 and r.json()["rev"].startswith("4-")
    assert alice.http.put(alice.url("bad"), data=b'{"k": "\xc3\x28"}', headers={"Content-Type": "application/json"}).status_code == 400
    assert alice.http.put(alice.url("bad"), data=b'[1]').status_code == 400
    r = alice.http.request("COPY", alice.url("doc"))
    assert r.status_code == 405 and set(r.json()) == {"error", "reason"}


def test_conflicts_and_open_revs(db):
    alice = db.user("alice")
    r = alice.bulk_replicated([
        {"_id": "c", "_rev": "2-bb", "_revisions": {"start": 2, "ids": ["bb", "aa"]}, "v": "b"},
        {"_id": "c", "_rev": "2-cc", "_revisions": {"start": 2, "ids": ["cc", "aa"]}, "v": "c"},
        {"_id": "c", "_rev": "3-dd", "_revisions": {"start": 3, "ids": ["dd", "bb", "aa"]}, "_deleted": True},
    ])
    assert all("error" not in x for x in r.json())
    got = alice.get("c", params={"conflicts": "true", "deleted_conflicts": "true"}).json()
    assert got["_rev"] == "2-cc" and "_conflicts" not in got and got["_deleted_conflicts"] == ["3-dd"]
    r = alice.get("c", params={"open_revs": "all"})
    assert sorted(x["ok"]["_rev"] for x in r.json()) == ["2-cc", "3-dd"]
    r = alice.get("c", params={"open_revs": json.dumps(["2-bb", "9-zz"]), "revs": "true", "latest": "true"})
    assert [x.get("ok", {}).get("_rev") or x.get("missing") for x in r.json()] == ["3-dd", "9-zz"]
    r = alice.get("c", params={"open_revs": json.dumps(["2-cc"])}, headers={"Accept": "multipart/mixed"})
    assert r.headers["Content-Type"].startswith("multipart/mixed")
    assert b'"_rev":"2-cc"' in r.content


def test_bulk_docs_both_modes(db):
    alice = db.user("alice")
    r = alice.post("_bulk_docs", {"docs": [{"_id": "a", "n": 1}, {"n": 2}]})
    assert r.status_code == 201
    assert all(x["ok"] and x["rev"].startswith("1-") for x in r.json())
    r = alice.post("_bulk_docs", {"docs": [{"_id": "a", "n": 3}]})
    assert r.json()[0]["error"] == "conflict"
    r = alice.bulk_replicated([{"_id": "a", "_rev": "1-ff", "n": 4}])
    assert "error" not in r.json()[0]


def test_all_docs(db):
    alice = db.user("alice")
    alice.post("_bulk_docs", {"docs": [{"_id": i, "n": i} for i in ["a", "b", "c", "d"]]})
    rows = alice.get("_all_docs").json()
    assert rows["total_rows"] == 4 and [r["id"] for r in rows["rows"]] == ["a", "b", "c", "d"]
    rows = alice.get("_all_docs", params={"startkey": '"b"', "endkey": '"c"', "include_docs": "true"}).json()["rows"]
    assert [r["doc"]["n"] for r in rows] == ["b", "c"]
    rows = alice.get("_all_docs", params={"startkey": '"b"', "endkey": '"d"', "inclusive_end": "false"}).json()["rows"]
    assert [r["id"] for r in rows] == ["b", "c"]
    rows = alice.get("_all_docs", params={"descending": "true", "limit": 2}).json()["rows"]
    assert [r["id"] for r in rows] == ["d", "c"]
    rows = alice.get("_all_docs", params={"skip": 3}).json()["rows"]
    assert [r["id"] for r in rows] == ["d"]
    rev_b = alice.get("b").json()["_rev"]
    alice.delete("b", params={"rev": rev_b})
    rows = alice.post("_all_docs", {"keys": ["b", "zz", "a"]}).json()["rows"]
    assert rows[0]["value"]["deleted"] is True and rows[1] == {"key": "zz", "error": "not_found"} and rows[2]["id"] == "a"


def test_changes_options(db):
    alice = db.user("alice")
    alice.post("_bulk_docs", {"docs": [{"_id": "a", "kind": "x"}, {"_id": "b", "kind": "y"}, {"_id": "c", "kind": "x"}]})
    ch = alice.get("_changes", params={"include_docs": "true"}).json()
    assert [r["doc"]["kind"] for r in ch["results"]] == ["x", "y", "x"] and ch["last_seq"] == 3
    ch = alice.get("_changes", params={"filter": "_doc_ids", "doc_ids": '["c","a"]'}).json()
    assert [r["id"] for r in ch["results"]] == ["a", "c"]
    ch = alice.post("_changes?filter=_doc_ids", {"doc_ids": ["b"]}).json()
    assert [r["id"] for r in ch["results"]] == ["b"]
    ch = alice.post("_changes?filter=_selector", {"selector": {"kind": "x", "_id": {"$gt": "a"}}}).json()
    assert [r["id"] for r in ch["results"]] == ["c"]
    ch = alice.get("_changes", params={"descending": "true", "limit": 1}).json()
    assert [r["id"] for r in ch["results"]] == ["c"]
    ch = alice.get("_changes", params={"since": "now"}).json()
    assert ch["results"] == [] and ch["last_seq"] == 3
    assert alice.get("_changes", params={"filter": "_view"}).status_code == 400


def write_later(client, doc_id, delay):
    def run():
        time.sleep(delay)
        client.put(doc_id, {"late": True})
    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_longpoll_continuous_eventsource_and_heartbeat(db):
    alice = db.user("alice")
    writer = write_later(alice, "late1", 0.5)
    ch = alice.get("_changes", params={"feed": "longpoll", "since": "now", "timeout": 10000}).json()
    writer.join()
    assert [r["id"] for r in ch["results"]] == ["late1"]

    writer = write_later(alice, "late2", 0.8)
    r = alice.get("_changes", params={"feed": "longpoll", "since": 1, "heartbeat": 200, "timeout": 10000})
    writer.join()
    assert r.text.startswith("\n")  # heartbeats before the answer
    assert [x["id"] for x in json.loads(r.text)["results"]] == ["late2"]

    r = alice.get("_changes", params={"feed": "continuous", "since": 0, "timeout": 300})
    lines = [json.loads(line) for line in r.text.splitlines() if line.strip()]
    assert [x["id"] for x in lines[:-1]] == ["late1", "late2"] and lines[-1] == {"last_seq": 2}

    r = alice.get("_changes", params={"feed": "continuous", "since": 0, "limit": 1})
    assert [json.loads(line)["id"] for line in r.text.splitlines() if line.strip() and "seq" in line and "id" in line] == ["late1"]

    r = alice.get("_changes", params={"feed": "eventsource", "since": 0, "timeout": 300})
    assert r.headers["Content-Type"].startswith("text/event-stream")
    events = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]
    assert [e["id"] for e in events] == ["late1", "late2"] and "id: 2" in r.text

    with alice.http.get(alice.url("_changes"), params={"feed": "continuous", "since": "now", "heartbeat": 200},
                        stream=True, timeout=30) as stream:
        started = time.monotonic()
        chunk = next(stream.iter_content(chunk_size=1))
        assert chunk == b"\n" and time.monotonic() - started < 5


def test_standalone_attachments(db):
    alice = db.user("alice")
    rev = alice.put("doc", {"v": 1}).json()["rev"]
    r = alice.http.put(alice.url("doc/photo.png"), params={"rev": rev}, data=b"\x89PNG...", headers={"Content-Type": "image/png"})
    assert r.status_code == 201
    rev2 = r.json()["rev"]
    r = alice.get("doc/photo.png")
    assert r.content == b"\x89PNG..." and r.headers["Content-Type"] == "image/png"
    doc = alice.get("doc").json()
    assert doc["_attachments"]["photo.png"]["length"] == 7 and doc["_attachments"]["photo.png"]["digest"].startswith("md5-")
    assert alice.http.put(alice.url("doc/other.txt"), params={"rev": rev}, data=b"x").status_code == 409
    r = alice.delete("doc/photo.png", params={"rev": rev2})
    assert r.status_code == 200
    assert alice.get("doc/photo.png").status_code == 404
    assert alice.get("nothing/photo.png").status_code == 404


def test_local_documents_with_delete(db):
    alice = db.user("alice")
    rev = alice.put("_local/cp", {"seq": 1}).json()["rev"]
    assert alice.delete("_local/cp", params={"rev": "0-9"}).status_code == 409
    assert alice.delete("_local/cp", params={"rev": rev}).status_code == 200
    assert alice.get("_local/cp").status_code == 404
    assert alice.put("_local/cp", {"seq": 2}).status_code == 201


def test_session_cookie_and_all_dbs(db):
    db.user("dave", password="pw")
    r = requests.post(ROOT + "/_session", json={"name": "dave", "password": "pw"}, timeout=30)
    assert r.status_code == 200 and r.json() == {"ok": True, "name": "dave", "roles": []}
    cookie = r.cookies["AuthSession"]
    r = requests.get(ROOT + "/_session", cookies={"AuthSession": cookie}, timeout=30).json()
    assert r["userCtx"]["name"] == "dave" and r["info"]["authenticated"] == "cookie"
    assert db.name in requests.get(ROOT + "/_all_dbs", cookies={"AuthSession": cookie}, timeout=30).json()
    assert requests.get(ROOT + "/_all_dbs", timeout=30).status_code == 401
    r = requests.get(f"{ROOT}/{db.name}/", cookies={"AuthSession": cookie}, timeout=30)
    assert r.status_code == 200
    # A session covers only the databases where the password matched.
    assert requests.get(f"{ROOT}/main/", cookies={"AuthSession": cookie}, timeout=30).status_code == 401
    r = requests.post(ROOT + "/_session", data={"name": "dave", "password": "wrong"}, timeout=30)
    assert r.status_code == 401 and r.json()["error"] == "unauthorized"
    requests.delete(ROOT + "/_session", cookies={"AuthSession": cookie}, timeout=30)
    assert requests.get(f"{ROOT}/{db.name}/", cookies={"AuthSession": cookie}, timeout=30).status_code == 401


def test_channels_hold_on_the_couchdb_paths(db):
    admin = db.user("admin")
    east = db.user("east", read="east", write="east")
    admin.put("w1", {"channels": ["west"], "secret": 1})
    rev_w = admin.get("w1").json()["_rev"]
    admin.http.put(admin.url("w1/a.txt"), params={"rev": rev_w}, data=b"secret")
    admin.put("e1", {"channels": ["east"]})
    assert east.get("w1/a.txt").status_code == 404
    assert east.get("w1", params={"open_revs": "all"}).json() == []
    assert [r["id"] for r in east.get("_all_docs").json()["rows"]] == ["e1"]
    assert east.post("_all_docs", {"keys": ["w1"]}).json()["rows"] == [{"key": "w1", "error": "not_found"}]
    assert east.get("").json()["doc_count"] == 1
    ch = east.get("_changes", params={"include_docs": "true"}).json()
    assert [r["id"] for r in ch["results"]] == ["e1"] and "secret" not in json.dumps(ch)
    r = east.put("w2", {"channels": ["west"]})
    assert r.status_code == 403 and r.json()["error"] == "forbidden"
    r = east.put("w1", {"_rev": rev_w, "channels": ["east"]})
    assert r.status_code in (403, 409) and "west" not in r.text
    assert east.delete("w1", params={"rev": rev_w}).status_code in (403, 409)
    assert east.put("nochannel", {"v": 1}).status_code == 403
