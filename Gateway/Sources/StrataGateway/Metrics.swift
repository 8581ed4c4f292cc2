import Foundation
import PostgresNIO
import Prometheus

/// The gateway's metrics, served at `GET /metrics` in Prometheus' text format: requests by route,
/// method and status; latency histograms by route; the open `_changes` feeds by kind and the
/// requests waiting for a change; requests in flight; the PostgreSQL pool's size, its connections
/// open and in use, and whether PostgreSQL is reachable; the process's resident memory.
final class GatewayMetrics: Sendable {
    /// The registry every metric is in.
    let registry = PrometheusCollectorRegistry()
    private let inFlight: Gauge
    private let poolSize: Gauge
    private let poolOpen: Gauge
    private let poolActive: Gauge
    private let reachable: Gauge
    private let waiting: Gauge
    private let memory: Gauge

    /// The latency buckets (long polls are measured too: up to the 300 s maximum timeout).
    static let buckets: [Duration] = [
        .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10), .seconds(30),
        .seconds(60), .seconds(300),
    ]

    private static func name(_ metric: String, unit: String = "", help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "strata_gateway", metricName: metric, unitName: unit, helpText: help)
    }

    /// - Parameter poolConnections: the PostgreSQL connections of this process's pool.
    init(poolConnections: Int) {
        inFlight = registry.makeGauge(descriptor: Self.name("requests_in_flight", help: "HTTP requests being answered"))
        poolSize = registry.makeGauge(descriptor: Self.name("postgres_pool_connections", help: "the most PostgreSQL connections of the pool"))
        reachable = registry.makeGauge(descriptor: Self.name("postgres_reachable", help: "1 while PostgreSQL is reachable"))
        waiting = registry.makeGauge(descriptor: Self.name("changes_waiting", help: "_changes requests waiting for a change now"))
        memory = registry.makeGauge(descriptor: MetricNameDescriptor(metricName: "process_resident_memory", unitName: "bytes", helpText: "resident memory"))
        poolOpen = registry.makeGauge(descriptor: Self.name("postgres_pool_connections_open", help: "PostgreSQL connections this process's pool has open now (pg_stat_activity)"))
        poolActive = registry.makeGauge(descriptor: Self.name("postgres_pool_connections_active", help: "of them, those running a query for a request now, the one counting excluded (pg_stat_activity)"))
        poolSize.set(to: Double(poolConnections))
    }

    /// Counts this process's pool connections in PostgreSQL's `pg_stat_activity` (postgres-nio
    /// reports no pool use of its own): open ones, and those running a query other than this one.
    /// Left as they were when PostgreSQL is unreachable or does not answer within a second, so
    /// that a scrape never waits on a saturated pool.
    func samplePool(_ pool: PostgresPool) async {
        guard pool.isReachable else { return }
        let client = pool.client
        let counts: (Int64, Int64)? = await withTaskGroup(of: (Int64, Int64)?.self) { group in
            group.addTask {
                guard let rows = try? await client.query("""
                    SELECT count(*)::int8, (count(*) FILTER (WHERE state = 'active' AND pid <> pg_backend_pid()))::int8
                    FROM pg_stat_activity WHERE application_name = \(PostgresSettings.poolApplicationName)
                    """), let row = try? await rows.collect().first,
                    let counts = try? row.decode((Int64, Int64).self) else { return nil }
                return counts
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(1))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        guard let counts else { return }
        poolOpen.set(to: Double(counts.0))
        poolActive.set(to: Double(counts.1))
    }

    /// A request began.
    func started() { inFlight.increment() }

    /// A request was answered.
    func finished(route: String, method: String, status: Int, duration: Duration) {
        inFlight.decrement()
        registry.makeCounter(descriptor: Self.name("requests", unit: "total", help: "HTTP requests answered"),
                             labels: [("route", route), ("method", method), ("status", String(status))]).increment()
        registry.makeDurationHistogram(descriptor: Self.name("request_duration", unit: "seconds", help: "time to answer (streamed feeds: to their headers)"),
                                       labels: [("route", route)], buckets: Self.buckets).record(duration)
    }

    /// A `_changes` query: `read` (a request's own) or `probe` (one per wake-up, shared by the
    /// waiters of a database).
    func changesQuery(_ kind: String) {
        registry.makeCounter(descriptor: Self.name("changes_queries", unit: "total", help: "_changes queries by kind"),
                             labels: [("kind", kind)]).increment()
    }

    /// The open `_changes` feeds of a kind (`longpoll`, `continuous`, `eventsource`).
    func feeds(_ kind: String) -> Gauge {
        registry.makeGauge(descriptor: Self.name("changes_feeds_open", help: "open _changes feeds that wait for changes"), labels: [("feed", kind)])
    }

    /// The text of `GET /metrics`, with the sampled gauges brought up to date.
    func render(waitingNow: Int, postgresReachable: Bool) -> [UInt8] {
        waiting.set(to: Double(waitingNow))
        reachable.set(to: postgresReachable ? 1 : 0)
        memory.set(to: Double(Self.residentMemory()))
        return registry.emitToBuffer()
    }

    /// The resident set size of this process (Linux: /proc/self/statm), 0 where unknown.
    static func residentMemory() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
