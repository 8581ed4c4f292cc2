"""Operators' expectations: /metrics in Prometheus' format, a health endpoint, structured
(JSON) logs, and a graceful shutdown that ends waiting feeds cleanly."""
import json
import signal
import threading
import time

import requests

from conftest import Client


def test_metrics_count_requests_feeds_and_memory(db, extra_gateway):
    gateway = extra_gateway()
    db.user("alice")
    alice = Client(gateway.root, db.name, "alice", "pw")
    alice.put("doc", {"v": 1})
    alice.get("doc")
    alice.get("nothing")
    got = {}
    poll = threading.Thread(target=lambda: got.update(r=alice.get("_changes", params={"feed": "longpoll", "since": "now", "timeout": 3000})))
    poll.start()
    time.sleep(0.7)
    text = requests.get(gateway.root + "/metrics", timeout=30).text
    poll.join()
    assert 'strata_gateway_requests_total{route="/{db}/{docid}",method="PUT",status="201"} 1' in text
    assert 'strata_gateway_requests_total{route="/{db}/{docid}",method="GET",status="404"} 1' in text
    assert 'strata_gateway_request_duration_seconds_bucket{route="/{db}/{docid}",le="+Inf"}' in text
    assert 'strata_gateway_changes_feeds_open{feed="longpoll"} 1' in text
    assert "strata_gateway_changes_waiting 1" in text
    assert "strata_gateway_postgres_reachable 1" in text
    # Pool use, from pg_stat_activity: at least the connection that counted is open.
    open_line = next(l for l in text.splitlines() if l.startswith("strata_gateway_postgres_pool_connections_open "))
    assert float(open_line.split()[1]) >= 1
    assert any(l.startswith("strata_gateway_postgres_pool_connections_active ") for l in text.splitlines())
    assert "process_resident_memory_bytes" in text
    # Ids never become labels.
    assert "nothing" not in text and '"doc"' not in text


def test_health(extra_gateway):
    gateway = extra_gateway()
    r = requests.get(gateway.root + "/_up", timeout=30)
    assert r.status_code == 200 and r.json() == {"status": "ok"}


def test_structured_logs(db, extra_gateway, tmp_path):
    log = open(tmp_path / "gateway.log", "w")
    gateway = extra_gateway(env={"LOG_LEVEL": "info"}, stderr=log)
    db.user("alice")
    Client(gateway.root, db.name, "alice", "pw").get("")
    gateway.stop()
    log.close()
    lines = [json.loads(line) for line in open(tmp_path / "gateway.log") if line.strip()]
    requests_logged = [line for line in lines if line["message"] == "request"]
    assert requests_logged and requests_logged[-1]["route"] == "/{db}" and requests_logged[-1]["status"] == "200"
    assert all({"time", "level", "label", "message"} <= set(line) for line in lines)


def test_graceful_shutdown_ends_waiting_feeds_cleanly(db, extra_gateway):
    gateway = extra_gateway()
    db.user("alice")
    alice = Client(gateway.root, db.name, "alice", "pw")
    answers = {}

    def longpoll():
        answers["longpoll"] = alice.get("_changes", params={"feed": "longpoll", "since": "now", "timeout": 60000})

    def continuous():
        answers["continuous"] = alice.get("_changes", params={"feed": "continuous", "since": "now", "heartbeat": 500})

    threads = [threading.Thread(target=longpoll), threading.Thread(target=continuous)]
    for thread in threads:
        thread.start()
    time.sleep(1.0)
    gateway.process.send_signal(signal.SIGTERM)
    for thread in threads:
        thread.join(20)
    assert gateway.process.wait(20) == 0
    assert answers["longpoll"].status_code == 200 and answers["longpoll"].json()["results"] == []
    lines = [line for line in answers["continuous"].text.splitlines() if line.strip()]
    assert json.loads(lines[-1]).keys() == {"last_seq"}
