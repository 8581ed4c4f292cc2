"""Channels, time series and the database's change feed (PROTOCOL.md "Channels and time series
(Strata's extension)"): publication, deletion, counts, series claims and events, the feed, path
rights by whole segments on every endpoint, and hostile input."""
import json
import threading
import time
import urllib.parse

import requests

from conftest import ROOT, Client, admin


def user(db, name, read_paths="", write_paths="", read="*", write="*", root=None):
    """A user of `db` with path rights (none by default, as the admin command gives)."""
    args = ["user", "add", name, "--database", db.name, "--password", "pw", "--read", read, "--write", write]
    if read_paths:
        args += ["--read-paths", read_paths]
    if write_paths:
        args += ["--write-paths", write_paths]
    admin(*args)
    return Client(root or db.root, db.name, name, "pw")


def q(name):
    return urllib.parse.quote(name, safe="")


def publish(c, channel, messages):
    return c.post(f"_strata/channels/{q(channel)}/publish", {"messages": messages})


def messages(c, channel, **params):
    return c.get(f"_strata/channels/{q(channel)}/messages", params=params)


def count(c, channel, **params):
    return c.get(f"_strata/channels/{q(channel)}/count", params=params)


def delete(c, channel, body=None):
    return c.post(f"_strata/channels/{q(channel)}/delete", body if body is not None else {})


def claim(c, path, writer):
    return c.post(f"_strata/series/{q(path)}/claim", {"writer": writer})


def events(c, path, writer, evs):
    return c.post(f"_strata/series/{q(path)}/events", {"writer": writer, "events": evs})


def ev(sequence, timestamp=1000, author="a", value=None, original=None):
    e = {"sequence": sequence, "timestamp": timestamp, "author": author, "value": value if value is not None else {"n": sequence}}
    if original is not None:
        e["original"] = original
    return e


def changes(c, **params):
    for key in ("channels", "series"):
        if key in params:
            params[key] = json.dumps(params[key])
    return c.get("_strata/changes", params=params)


def ok(r, status=200):
    assert r.status_code == status, (r.status_code, r.text)
    return r.json()


# Channels


def test_publish_assigns_consecutive_timetokens_above_every_earlier_one(db):
    c = user(db, "alice", "*", "*")
    before = int(time.time() * 1e7)
    first = ok(publish(c, "chat", [{"id": f"m{i}", "message": i} for i in range(3)]))["results"]
    assert [r["id"] for r in first] == ["m0", "m1", "m2"]
    tts = [int(r["timetoken"]) for r in first]
    assert all(isinstance(r["timetoken"], str) for r in first)
    assert tts == [tts[0], tts[0] + 1, tts[0] + 2]
    assert before <= tts[0] <= int(time.time() * 1e7) + 10**7
    seqs = [r["seq"] for r in first]
    assert seqs == [seqs[0], seqs[0] + 1, seqs[0] + 2]
    second = ok(publish(c, "chat", [{"id": "m3", "message": 3}]))["results"]
    assert int(second[0]["timetoken"]) > tts[2] and second[0]["seq"] > seqs[2]
    listed = ok(messages(c, "chat"))
    assert [m["id"] for m in listed["messages"]] == ["m0", "m1", "m2", "m3"]
    assert listed["last"] == second[0]["timetoken"]
    assert ok(count(c, "chat")) == {"count": 4}
    assert ok(count(c, "chat", since=str(tts[1]))) == {"count": 2}
    assert ok(messages(c, "nothing")) == {"messages": [], "last": "0"}


def test_a_retried_publish_answers_what_it_got_and_adds_nothing(db):
    c = user(db, "alice", "*", "*")
    first = ok(publish(c, "chat", [{"id": "a", "message": 1}, {"id": "b", "message": 2}]))["results"]
    again = ok(publish(c, "chat", [{"id": "b", "message": "changed"}, {"id": "c", "message": 3}, {"id": "a", "message": 1}]))["results"]
    assert again[0] == first[1] and again[2] == first[0]
    assert again[1]["id"] == "c" and int(again[1]["timetoken"]) > int(first[1]["timetoken"])
    listed = ok(messages(c, "chat"))["messages"]
    assert [(m["id"], m["message"]) for m in listed] == [("a", 1), ("b", 2), ("c", 3)]
    # The same id in another channel is another message.
    other = ok(publish(c, "other", [{"id": "a", "message": 9}]))["results"]
    assert other[0]["seq"] > again[1]["seq"]


def test_values_come_back_byte_for_byte(db):
    c = user(db, "alice", "*", "*")
    message = '{"x": 1.10, "big": 12345678901234567890123, "e": 1E+2, "s": "caf\\u00e9 \\ud83d\\ude00", "a": [ true , null ]}'
    meta = '{"z":0.1000000000000000055511151231257827}'
    body = '{"messages": [{"id": "v1", "message": ' + message + ', "meta": ' + meta + ', "publisher": "pub"}]}'
    ok(c.post(f"_strata/channels/raw/publish", body))
    text = messages(c, "raw").text
    assert '"message":' + message + ',"meta":' + meta + ',"publisher":"pub"' in text, text
    feed = changes(c, channels=["raw"]).text
    assert '"message":' + message in feed and '"meta":' + meta in feed, feed
    claim(c, "s", "w")
    value = '[1.0, -0.0, 5e-324, "\\u0000"]'
    ok(c.post("_strata/series/s/events", '{"writer": "w", "events": [{"sequence": 0, "timestamp": 1, "author": "x", "value": ' + value + '}]}'))
    assert '"value":' + value in c.get("_strata/series/s/events").text
    assert '"value":' + value in changes(c, series=["s"]).text


def test_concurrent_publishes_keep_timetoken_order_equal_to_feed_order(db):
    c = user(db, "alice", "*", "*")
    errors = []

    def run(t):
        mine = Client(c.root, c.db, "alice", "pw")
        for k in range(8):
            r = publish(mine, "busy", [{"id": f"t{t}k{k}i{i}", "message": i} for i in range(25)])
            if r.status_code != 200:
                errors.append(r.text)

    threads = [threading.Thread(target=run, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    feed = ok(changes(c, channels=["busy"]))["results"]
    assert len(feed) == 4 * 8 * 25
    seqs = [r["seq"] for r in feed]
    tts = [int(r["timetoken"]) for r in feed]
    assert seqs == sorted(seqs) and tts == sorted(tts) and len(set(tts)) == len(tts)


def test_delete_applies_its_bounds_and_ids_stay_known(db):
    c = user(db, "alice", "*", "*")
    res = ok(publish(c, "chat", [{"id": f"m{i}", "message": i} for i in range(5)]))["results"]
    tts = [r["timetoken"] for r in res]
    d = ok(delete(c, "chat", {"from": tts[1], "until": tts[3]}))
    assert d["ok"] is True and d["from"] == tts[1] and d["until"] == tts[3] and d["seq"] > res[-1]["seq"]
    assert [m["id"] for m in ok(messages(c, "chat"))["messages"]] == ["m0", "m3", "m4"]
    assert ok(count(c, "chat")) == {"count": 3}
    # A retried publish of a deleted message answers what it got and stays deleted.
    again = ok(publish(c, "chat", [{"id": "m1", "message": 1}]))["results"][0]
    assert again == res[1]
    assert ok(count(c, "chat")) == {"count": 3}
    # Without bounds: everything up to the newest message.
    d2 = ok(delete(c, "chat"))
    assert d2["from"] == "0" and int(d2["until"]) == int(tts[4]) + 1
    assert ok(messages(c, "chat")) == {"messages": [], "last": tts[4]}
    # New messages come after every timetoken the channel ever had.
    new = ok(publish(c, "chat", [{"id": "m5", "message": 5}]))["results"][0]
    assert int(new["timetoken"]) > int(tts[4])
    feed = ok(changes(c, channels=["chat"]))["results"]
    assert [(r["kind"], r.get("id")) for r in feed] == [("delete", None), ("delete", None), ("message", "m5")]
    assert feed[0] == {"seq": d["seq"], "kind": "delete", "channel": "chat", "from": tts[1], "until": tts[3]}


def test_messages_after_and_limit(db):
    c = user(db, "alice", "*", "*")
    res = ok(publish(c, "chat", [{"id": f"m{i}", "message": i} for i in range(10)]))["results"]
    page = ok(messages(c, "chat", after=res[3]["timetoken"], limit="4"))["messages"]
    assert [m["id"] for m in page] == ["m4", "m5", "m6", "m7"]
    assert page[0] == {"timetoken": res[4]["timetoken"], "id": "m4", "message": 4, "seq": res[4]["seq"]}


# Time series


def test_a_series_has_one_writer_and_a_claim_is_idempotent(db):
    c = user(db, "alice", "*", "*")
    assert ok(claim(c, "temp", "w1")) == {"writer": "w1", "next": 0, "start": 0}
    assert ok(claim(c, "temp", "w1")) == {"writer": "w1", "next": 0, "start": 0}
    r = claim(c, "temp", "w2")
    assert r.status_code == 409 and r.json()["error"] == "conflict" and "w1" not in r.text
    r = events(c, "temp", "w2", [ev(0)])
    assert r.status_code == 409
    assert ok(c.get("_strata/series/temp/events")) == {"events": [], "start": 0, "next": 0, "writer": "w1"}
    ok(events(c, "temp", "w1", [ev(0)]))
    assert "released" in admin("series", "release", "--database", db.name, "temp")
    assert ok(c.get("_strata/series/temp/events"))["writer"] is None
    assert ok(claim(c, "temp", "w2")) == {"writer": "w2", "next": 1, "start": 0}
    assert events(c, "temp", "w1", [ev(1)]).status_code == 409
    assert ok(c.get("_strata/series/nothing/events")) == {"events": [], "start": 0, "next": 0, "writer": None}


def test_events_append_retry_fork_and_gap(db):
    c = user(db, "alice", "*", "*")
    ok(claim(c, "s", "w"))
    assert ok(events(c, "s", "w", [ev(10, 100), ev(11, 100), ev(12, 105)])) == {"ok": True, "next": 13}
    # An identical retry overlapping new events: the new ones are appended.
    assert ok(events(c, "s", "w", [ev(11, 100), ev(12, 105), ev(13, 106)])) == {"ok": True, "next": 14}
    assert ok(events(c, "s", "w", [ev(10, 100)])) == {"ok": True, "next": 14}
    # A fork (a different event below next) is refused whole.
    for fork in ([ev(12, 105, value={"n": 99})], [ev(12, 105, author="b")], [ev(12, 106)], [ev(12, 105, original=10)],
                 [ev(13, 106), ev(14, 107)][:0] + [ev(9, 100), ev(10, 100)]):
        r = events(c, "s", "w", fork)
        assert r.status_code == 409 and r.json()["error"] == "conflict", (fork, r.text)
    r = events(c, "s", "w", [ev(13, 106, value={"n": 0}), ev(14, 107)])
    assert r.status_code == 409 and "13" in r.json()["reason"]
    # A gap is a 400.
    r = events(c, "s", "w", [ev(15, 200)])
    assert r.status_code == 400 and r.json()["error"] == "bad_request"
    listed = ok(c.get("_strata/series/s/events"))
    assert listed["start"] == 10 and listed["next"] == 14 and [e["sequence"] for e in listed["events"]] == [10, 11, 12, 13]
    assert set(listed["events"][0]) == {"sequence", "timestamp", "author", "value", "seq"}
    page = ok(c.get("_strata/series/s/events", params={"from": "11", "limit": "2"}))["events"]
    assert [e["sequence"] for e in page] == [11, 12]


def test_timestamps_never_decrease_and_originals_name_earlier_non_edits(db):
    c = user(db, "alice", "*", "*")
    ok(claim(c, "s", "w"))
    ok(events(c, "s", "w", [ev(0, 100), ev(1, 100, original=0)]))
    for bad in ([ev(2, 99)], [ev(2, 100), ev(3, 99)], [ev(2, 100, original=1)], [ev(2, 100, original=2)],
                [ev(2, 100, original=5)], [ev(2, 100), ev(3, 100, original=2), ev(4, 100, original=3)]):
        r = events(c, "s", "w", bad)
        assert r.status_code == 400 and r.json()["error"] == "bad_request", (bad, r.text)
    assert ok(c.get("_strata/series/s/events"))["next"] == 2
    ok(events(c, "s", "w", [ev(2, 100), ev(3, 101, original=2), ev(4, 101, original=0)]))
    # Events of a request are consecutive.
    r = events(c, "s", "w", [ev(5, 101), ev(7, 101)])
    assert r.status_code == 400
    got = ok(c.get("_strata/series/s/events"))["events"]
    assert [e.get("original") for e in got] == [None, 0, None, 2, 0]


# The change feed


def test_the_feed_lists_every_kind_in_sequence_order(db):
    c = user(db, "alice", "*", "*")
    since = ok(c.get(""))["update_seq"]
    m = ok(publish(c, "chat", [{"id": "m1", "message": {"t": 1}, "meta": [1], "publisher": "p"}]))["results"][0]
    ok(claim(c, "s", "w"))
    ok(events(c, "s", "w", [ev(0, 5, original=None)]))
    d = ok(delete(c, "chat", {"from": "0", "until": "1"}))
    doc = ok(c.put("doc1", {"v": 1}), 201)
    feed = ok(changes(c, since=str(since)))
    kinds = [r["kind"] for r in feed["results"]]
    assert kinds == ["message", "event", "delete", "document"]
    r = feed["results"]
    assert r[0] == {"seq": m["seq"], "kind": "message", "channel": "chat", "timetoken": m["timetoken"], "id": "m1",
                    "message": {"t": 1}, "meta": [1], "publisher": "p"}
    assert r[1] == {"seq": r[1]["seq"], "kind": "event", "series": "s", "sequence": 0, "timestamp": 5, "author": "a", "value": {"n": 0}}
    assert r[2] == {"seq": d["seq"], "kind": "delete", "channel": "chat", "from": "0", "until": "1"}
    assert r[3] == {"seq": r[3]["seq"], "kind": "document", "id": "doc1", "rev": doc["rev"]}
    assert feed["last_seq"] == r[3]["seq"] == ok(c.get(""))["update_seq"]
    ok(c.delete("doc1", params={"rev": doc["rev"]}))
    last = ok(changes(c, since=str(feed["last_seq"])))["results"]
    assert last[0]["kind"] == "document" and last[0]["deleted"] is True
    # Paging by limit.
    page = ok(changes(c, since=str(since), limit="2"))
    assert len(page["results"]) == 2 and page["last_seq"] == page["results"][1]["seq"]
    rest = ok(changes(c, since=str(page["last_seq"])))["results"]
    assert [x["kind"] for x in rest] == ["delete", "document"]


def test_feed_filters_by_channels_and_series(db):
    c = user(db, "alice", "*", "*")
    ok(publish(c, "a", [{"id": "x", "message": 1}]))
    ok(publish(c, "b", [{"id": "y", "message": 2}]))
    ok(claim(c, "s", "w"))
    ok(events(c, "s", "w", [ev(0)]))
    ok(claim(c, "t", "w"))
    ok(events(c, "t", "w", [ev(0)]))
    ok(c.put("doc", {"v": 1}), 201)
    only_a = ok(changes(c, channels=["a"]))["results"]
    assert [(r["kind"], r.get("channel")) for r in only_a] == [("message", "a")]
    mixed = ok(changes(c, channels=["b"], series=["t"]))["results"]
    assert [(r["kind"], r.get("channel") or r.get("series")) for r in mixed] == [("message", "b"), ("event", "t")]
    assert ok(changes(c, channels=[]))["results"] == []
    assert len(ok(changes(c, channels=["a", "a", "b"], series=["s", "s"]))["results"]) == 3
    everything = ok(changes(c))["results"]
    assert len(everything) == 5


def test_a_filtered_page_lists_each_result_exactly_as_the_whole_feed_does(db):
    # The filtered feed's JSON is written by PostgreSQL, the whole feed's by the gateway: the same
    # results, names, authors and values escaped where JSON requires it, and nowhere else.
    c = user(db, "alice", "*", "*")
    since = ok(c.get(""))["update_seq"]
    room = 'q"uo\\te/\u00e9\u2028\x01\x1f\ttab'
    path = 'se"r\\ies/\U0001F600\x7f'
    ok(publish(c, room, [{"id": "m1", "message": {"t": "\u00e9\n"}, "meta": [1, None], "publisher": 'p"q'},
                         {"id": "m2", "message": 2.5e-8}]))
    ok(claim(c, path, "w"))
    ok(events(c, path, "w", [ev(0, 5, author='a"\\\u00e9\n\x02'), ev(1, 6, value=[None, 1.5], original=0)]))
    ok(delete(c, room, {"from": "0", "until": "1"}))
    whole = ok(changes(c, since=str(since)))
    answer = changes(c, since=str(since), channels=[room], series=[path])
    filtered = json.loads(answer.text)  # strict: a raw control character in a string fails
    assert filtered["results"] == [r for r in whole["results"] if r["kind"] != "document"]
    assert [r["kind"] for r in filtered["results"]] == ["message", "message", "event", "event", "delete"]
    assert filtered["results"][3]["original"] == 0 and "original" not in filtered["results"][2]
    assert "meta" not in filtered["results"][1] and "publisher" not in filtered["results"][1]
    assert filtered["last_seq"] == whole["last_seq"]
    # Paged by limit, a page ends at its last result.
    page = ok(changes(c, since=str(since), limit="2", channels=[room], series=[path]))
    assert page["results"] == filtered["results"][:2] and page["last_seq"] == page["results"][1]["seq"]


def test_feed_rights_403_and_last_seq_past_unreadable_changes(db):
    owner = user(db, "owner", "*", "*")
    reader = user(db, "reader", "chat", "", read="east")
    ok(publish(owner, "chat/room1", [{"id": "m1", "message": 1}]))
    ok(publish(owner, "chatter", [{"id": "m2", "message": 2}]))
    ok(claim(owner, "secret", "w"))
    ok(events(owner, "secret", "w", [ev(0)]))
    ok(owner.bulk_replicated([{"_id": "w", "_rev": "1-aa", "channels": ["west"]}]), 201)
    top = ok(owner.get(""))["update_seq"]
    feed = ok(changes(reader))
    assert [(r["kind"], r.get("channel")) for r in feed["results"]] == [("message", "chat/room1")]
    assert feed["last_seq"] == top
    assert "chatter" not in json.dumps(feed) and "secret" not in json.dumps(feed)
    for params in ({"channels": ["chatter"]}, {"series": ["secret"]}, {"channels": ["chat", "chatter"]}):
        r = changes(reader, **params)
        assert r.status_code == 403 and r.json()["error"] == "forbidden", r.text
    r = changes(reader, channels=["chat/room1"], series=["secret"])
    assert r.status_code == 403 and "chat/room1" not in r.json()["reason"]
    ok(changes(reader, channels=["chat/room1", "chat"]))


def test_longpoll_is_woken_by_a_write_through_another_gateway_process(db, extra_gateway):
    c = user(db, "alice", "*", "*")
    other = extra_gateway()
    writer = Client(other.root, db.name, "alice", "pw")
    since = ok(c.get(""))["update_seq"]
    answer = {}

    def poll():
        started = time.monotonic()
        answer["r"] = changes(c, since=str(since), feed="longpoll", timeout="20000", channels=["chat"])
        answer["elapsed"] = time.monotonic() - started

    t = threading.Thread(target=poll)
    t.start()
    time.sleep(1.0)
    ok(writer.put("unrelated", {"v": 1}), 201)  # wakes the poll, which waits on: not its channel
    time.sleep(0.5)
    assert "r" not in answer
    ok(publish(writer, "chat", [{"id": "m", "message": 1}]))
    t.join(25)
    r = answer["r"]
    assert r.status_code == 200
    assert [x["id"] for x in r.json()["results"]] == ["m"]
    assert answer["elapsed"] < 10
    # An event and a deletion wake it too.
    for write in (lambda: (claim(writer, "s", "w"), events(writer, "s", "w", [ev(0)])),
                  lambda: delete(writer, "chat")):
        since = ok(c.get(""))["update_seq"]
        answer.clear()
        t = threading.Thread(target=lambda: answer.update(r=changes(c, since=str(since), feed="longpoll", timeout="20000")))
        t.start()
        time.sleep(0.7)
        assert "r" not in answer
        write()
        t.join(25)
        assert len(answer["r"].json()["results"]) == 1, answer["r"].text
    r = changes(c, since=str(ok(c.get(""))["update_seq"]), feed="longpoll", timeout="300")
    assert ok(r)["results"] == []


# Path rights by whole segments, on every endpoint


def test_path_rights_cover_whole_segments_on_every_endpoint(db):
    owner = user(db, "owner", "*", "*")
    # Reads chat and below; writes chat/room1 and below only.
    u = user(db, "u", "chat", "chat/room1")
    nobody = user(db, "nobody")
    ok(publish(owner, "chatter", [{"id": "x", "message": 1}]))
    ok(claim(owner, "chatter", "w"))
    ok(claim(owner, "chat/room2", "w"))

    def forbidden(r):
        assert r.status_code == 403 and r.json()["error"] == "forbidden", r.text

    # Writes.
    ok(publish(u, "chat/room1", [{"id": "a", "message": 1}]))
    ok(publish(u, "chat/room1/sub", [{"id": "a", "message": 1}]))
    for name in ("chat", "chat/room2", "chat/room10", "chatter", "other"):
        forbidden(publish(u, name, [{"id": "b", "message": 1}]))
        forbidden(delete(u, name))
        forbidden(claim(u, name, "w2"))
        forbidden(events(u, name, "w", [ev(0)]))
    ok(delete(u, "chat/room1", {"until": "1"}))
    ok(claim(u, "chat/room1", "mine"))
    ok(events(u, "chat/room1", "mine", [ev(0)]))
    assert ok(count(owner, "chat/room2")) == {"count": 0}
    assert ok(owner.get("_strata/series/chat%2Froom2/events"))["events"] == []
    # Reads.
    for name in ("chat", "chat/room1", "chat/room2/x"):
        ok(messages(u, name))
        ok(count(u, name))
        ok(u.get(f"_strata/series/{q(name)}/events"))
        ok(changes(u, channels=[name], series=[name]))
    for name in ("chatter", "cha", "other"):
        forbidden(messages(u, name))
        forbidden(count(u, name))
        forbidden(u.get(f"_strata/series/{q(name)}/events"))
        forbidden(changes(u, channels=[name]))
        forbidden(changes(u, series=[name]))
    # No path rights by default: every stream is refused, and the feed lists documents only.
    for r in (messages(nobody, "chat"), count(nobody, "chat"), publish(nobody, "chat", [{"id": "a", "message": 1}]),
              claim(nobody, "chat", "w"), nobody.get("_strata/series/chat/events"), changes(nobody, channels=["chat"])):
        forbidden(r)
    ok(owner.put("doc", {"v": 1}), 201)
    assert [r["kind"] for r in ok(changes(nobody))["results"]] == ["document"]
    # A refused write changed nothing.
    assert ok(messages(owner, "chat"))["messages"] == []
    listed = admin("user", "list", "--database", db.name)
    assert "read-paths=chat\twrite-paths=chat/room1" in listed
    admin("user", "set", "nobody", "--database", db.name, "--read-paths", "*")
    ok(messages(nobody, "chatter"))


# Hostile input


def test_hostile_names_numbers_and_bodies_are_client_errors(db):
    c = user(db, "alice", "*", "*")
    ok(publish(c, "chat", [{"id": "m0", "message": 0}]))
    ok(claim(c, "s", "w"))
    bad_names = ["a%2F%2Fb", "%2Fa", "a%2F", "a%00b", "x" * 1025]
    for name in bad_names:
        for r in (c.post(f"_strata/channels/{name}/publish", {"messages": [{"id": "a", "message": 1}]}),
                  c.get(f"_strata/channels/{name}/messages"), c.get(f"_strata/channels/{name}/count"),
                  c.post(f"_strata/channels/{name}/delete", {}), c.post(f"_strata/series/{name}/claim", {"writer": "w"}),
                  c.post(f"_strata/series/{name}/events", {"writer": "w", "events": [ev(0)]}),
                  c.get(f"_strata/series/{name}/events")):
            assert r.status_code == 400 and r.json()["error"] == "bad_request", (name, r.status_code, r.text)
    for names in (["a//b"], ["/a"], ["a\u0000"], [""], [1], "notjson", {"a": 1}, ["x" * 1025]):
        r = c.get("_strata/changes", params={"channels": json.dumps(names) if names != "notjson" else names})
        assert r.status_code == 400, (names, r.text)
    for value in ("abc", "-1", "+5", "1.5", "9223372036854775808", "99999999999999999999", " 1", ""):
        for r in (messages(c, "chat", after=value), count(c, "chat", since=value), delete(c, "chat", {"from": value}),
                  delete(c, "chat", {"until": value}), c.get("_strata/series/s/events", params={"from": value}),
                  messages(c, "chat", limit=value)):
            assert r.status_code == 400, (value, r.url, r.text)
        if value:
            assert changes(c, since=value).status_code == 400
    assert delete(c, "chat", {"from": 5}).status_code == 400
    for bad in (-1, 2**63, 2**63 - 1, 2**64, 1.5, "1", None, 1e3):
        r = events(c, "s", "w", [ev(0) | {"sequence": bad}])
        assert r.status_code == 400, (bad, r.text)
    for bad in (2**63, -(2**63) - 1, 1.0, "5", None):
        r = events(c, "s", "w", [ev(0) | {"timestamp": bad}])
        assert r.status_code == 400, (bad, r.text)
    for bad in (-1, 2**63, "0", 0.5):
        assert events(c, "s", "w", [ev(0), ev(1, original=bad)]).status_code == 400
    assert events(c, "s", "w", [ev(0) | {"author": "a\u0000b"}]).status_code == 400
    assert events(c, "s", "w", [ev(0) | {"author": 5}]).status_code == 400
    assert events(c, "s", "w", [{"sequence": 0, "timestamp": 1, "author": "a"}]).status_code == 400
    ok(events(c, "s", "w", [ev(0, timestamp=-(2**63))]))
    # Writers and bodies.
    for writer in ("", "x" * 65, "a b", "é", 5, None):
        assert c.post("_strata/series/s2/claim", {"writer": writer}).status_code == 400
    for body in (b"not json", b"", b"[]", b'{"messages": {}}', b'{"messages": []}', b'{"messages": [1}', b'"\xff"'):
        r = c.post("_strata/channels/chat/publish", body)
        assert r.status_code == 400 and r.json()["error"] == "bad_request", (body, r.text)
        r = c.post("_strata/series/s/events", body)
        assert r.status_code == 400, (body, r.text)
    for body in (b"nope", b"[]", b'{"from": "1"'):
        assert c.post("_strata/channels/chat/delete", body).status_code == 400
    r = publish(c, "chat", [{"id": "same", "message": 1}, {"id": "same", "message": 2}])
    assert r.status_code == 400
    # Per-message errors: bad ids, no message; the others are accepted.
    res = ok(publish(c, "chat", [{"id": "x" * 65, "message": 1}, {"id": "a b", "message": 1}, {"message": 1}, 5,
                                 {"id": "nomsg"}, {"id": "nul\u0000", "message": 1}, {"id": "good", "message": 1}]))["results"]
    assert [x.get("status") for x in res] == [400, 400, 400, 400, 400, 400, None], res
    assert [m["id"] for m in ok(messages(c, "chat"))["messages"]] == ["m0", "good"]
    # 10,001 entries are refused whole.
    r = publish(c, "chat", [{"id": f"i{i}", "message": i} for i in range(10001)])
    assert r.status_code == 413 and r.json()["error"] == "request_entity_too_large"
    r = events(c, "s", "w", [ev(i + 1) for i in range(10001)])
    assert r.status_code == 413
    assert ok(count(c, "chat")) == {"count": 2}
    # Unknown endpoints and methods.
    assert c.get("_strata/channels/chat/nothing").status_code == 404
    assert c.get("_strata/nothing").status_code == 404
    assert c.get("_strata/channels/chat/publish").status_code == 405
    assert c.post("_strata/changes", {}).status_code == 405
    for r in (changes(c, limit="-1"), changes(c, feed="continuous"), changes(c, timeout="x")):
        assert r.status_code == 400
    assert "postgres" not in r.text.lower()


def test_a_message_over_the_document_limit_is_a_per_message_413(db, extra_gateway):
    user(db, "alice", "*", "*")
    gateway = extra_gateway("--max-document-size", "1000")
    c = Client(gateway.root, db.name, "alice", "pw")
    res = ok(publish(c, "chat", [{"id": "big", "message": "x" * 2000}, {"id": "small", "message": "x"}]))["results"]
    assert res[0]["status"] == 413 and res[0]["error"] == "request_entity_too_large"
    assert "timetoken" in res[1]
    assert [m["id"] for m in ok(messages(c, "chat"))["messages"]] == ["small"]


def test_metrics_name_routes_not_channels(db):
    c = user(db, "alice", "*", "*")
    ok(publish(c, "secret-channel", [{"id": "a", "message": 1}]))
    ok(changes(c))
    c.get("_strata/whatever/x/y/z")
    text = requests.get(f"{ROOT}/metrics", timeout=30).text
    assert 'route="/{db}/_strata/channels/{name}/publish"' in text
    assert 'route="/{db}/_strata/changes"' in text
    assert 'route="/{db}/_strata/{other}"' in text
    assert "secret-channel" not in text


def test_a_feed_page_stops_at_about_8_mib(db):
    c = user(db, "alice", "*", "*")
    since = ok(c.get(""))["update_seq"]
    big = "x" * (1024 * 1024)
    res = ok(publish(c, "big", [{"id": f"m{i}", "message": big} for i in range(10)]))["results"]
    first = changes(c, since=str(since))
    page = ok(first)
    assert 8 * 1024 * 1024 <= len(first.content) < 10 * 1024 * 1024
    assert len(page["results"]) == 8 and page["last_seq"] == res[7]["seq"]
    rest = ok(changes(c, since=str(page["last_seq"])))
    assert [r["id"] for r in rest["results"]] == ["m8", "m9"] and rest["last_seq"] == res[9]["seq"]
    # The same through a filter (PostgreSQL writes those pages).
    filtered = changes(c, since=str(since), channels=["big"])
    assert 8 * 1024 * 1024 <= len(filtered.content) < 10 * 1024 * 1024
    assert ok(filtered)["results"] == page["results"] and ok(filtered)["last_seq"] == res[7]["seq"]
