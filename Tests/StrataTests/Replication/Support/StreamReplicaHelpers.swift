import Foundation
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// One message as every side must hold it after convergence.
struct SharedMessage: Equatable, CustomStringConvertible {
    var timetoken: UInt64
    var message: String
    var publisher: String?
    var description: String { "\(timetoken):\(message)" }
}

/// One event as every side must hold it after convergence.
struct SharedEvent: Equatable, CustomStringConvertible {
    var sequence: UInt64
    var timestamp: Int64
    var author: String
    var value: Double
    var original: UInt64?
    var description: String { "\(sequence)@\(timestamp) \(author) \(value)\(original.map { " edits \($0)" } ?? "")" }
}

enum StreamReplicaState {
    /// Starts a replication of series `path` of `store` with `configuration` and waits until the
    /// store holds the role `writer` asks for (the writer's claim granted, or a reader's refused).
    static func replicateSeries(_ store: ReplicaStore, _ path: String, configuration: ReplicationConfiguration,
                                writer: Bool) async throws -> Replication {
        let series = try await store.handle.timeSeries(path, of: Double.self)
        let replication = try series.startReplication(with: configuration)
        let settled = await waitUntil(seconds: 60, interval: .milliseconds(20)) {
            switch series.state.replicationRole {
            case .writer?: return writer
            case .reader?: return !writer
            default: return false
            }
        }
        guard settled else {
            throw FixtureError("\(store.name) \(path): role \(String(describing: series.state.replicationRole)), status \(replication.status)")
        }
        return replication
    }

    /// A name as one URL path segment.
    static func segment(_ name: String) -> String {
        name.addingPercentEncoding(withAllowedCharacters: StreamReplicator.unreserved) ?? name
    }

    /// The whole history of channel `name` of `store`, oldest first, and whether any message is
    /// still provisional.
    static func history(_ store: Store, _ name: String) throws -> (messages: [SharedMessage], provisional: Int) {
        let channel = try store.channel(name, of: String.self)
        var pages: [[HistoryMessage<String>]] = []
        var start: Timetoken?
        while true {
            let page = try channel.history(start: start, limit: 100)
            if page.messages.isEmpty { break }
            pages.append(page.messages)
            guard page.hasMore, let first = page.messages.first?.timetoken else { break }
            start = first
        }
        let all = pages.reversed().flatMap { $0 }
        return (all.map { SharedMessage(timetoken: $0.timetoken.rawValue, message: $0.message, publisher: $0.publisher) },
                all.filter(\.isProvisional).count)
    }

    /// The gateway's history of channel `name`, oldest first.
    static func gatewayHistory(_ client: GatewayHTTPClient, _ name: String) async throws -> [SharedMessage] {
        var out: [SharedMessage] = []
        var after: UInt64 = 0
        while true {
            let answer = try await client.checked("GET", "_strata/channels/\(segment(name))/messages?after=\(after)&limit=10000")
            guard case .array(let messages)? = answer["messages"] else { throw FixtureError("no messages in \(answer)") }
            if messages.isEmpty { return out }
            for m in messages {
                guard let tt = m["timetoken"]?.stringValue.flatMap(UInt64.init), let text = m["message"]?.stringValue else {
                    throw FixtureError("bad message \(m)")
                }
                out.append(SharedMessage(timetoken: tt, message: text, publisher: m["publisher"]?.stringValue))
                after = tt
            }
        }
    }

    /// Every event of series `path` of `store` (values as Double).
    static func events(_ store: Store, _ path: String) throws -> [SharedEvent] {
        let series = try store.timeSeries(path, of: Double.self)
        return try series.query(.edits(.all)).events.map {
            SharedEvent(sequence: $0.sequence, timestamp: Int64(($0.timestamp.timeIntervalSince1970 * 1000).rounded()),
                        author: $0.author, value: $0.value, original: $0.originalEvent?.sequence)
        }
    }

    /// The gateway's events of series `path`.
    static func gatewayEvents(_ client: GatewayHTTPClient, _ path: String) async throws -> [SharedEvent] {
        var out: [SharedEvent] = []
        var from: UInt64 = 0
        while true {
            let answer = try await client.checked("GET", "_strata/series/\(segment(path))/events?from=\(from)&limit=10000")
            guard case .array(let events)? = answer["events"] else { throw FixtureError("no events in \(answer)") }
            if events.isEmpty { return out }
            for e in events {
                guard case .int(let sequence)? = e["sequence"], case .int(let timestamp)? = e["timestamp"],
                      let author = e["author"]?.stringValue, let value = e["value"]?.doubleValue else {
                    throw FixtureError("bad event \(e)")
                }
                var original: UInt64?
                if case .int(let o)? = e["original"] { original = UInt64(o) }
                out.append(SharedEvent(sequence: UInt64(sequence), timestamp: timestamp, author: author, value: value, original: original))
                from = UInt64(sequence) + 1
            }
        }
    }

    /// Waits until every store's channels and series equal the gateway's, with no provisional
    /// message left; returns whether they did and a report of the last look.
    static func awaitConvergence(stores: [ReplicaStore], channels: [String], series: [String],
                                 server: GatewayHTTPClient, seconds: Double = 120) async throws -> (Bool, String) {
        var report = ""
        let done = try await waitUntil(seconds: seconds, interval: .milliseconds(300)) {
            report = ""
            var ok = true
            for name in channels {
                let reference: [SharedMessage]
                do { reference = try await gatewayHistory(server, name) } catch { report += "gateway \(name): \(error); "; return false }
                for store in stores {
                    let (messages, provisional) = try history(store.handle, name)
                    if messages != reference || provisional > 0 {
                        ok = false
                        let missing = reference.filter { !messages.contains($0) }.prefix(3)
                        let extra = messages.filter { !reference.contains($0) }.prefix(3)
                        report += "\(store.name) \(name): \(messages.count) messages (\(provisional) provisional) vs \(reference.count), missing \(missing), extra \(extra); "
                    }
                }
            }
            for path in series {
                let reference: [SharedEvent]
                do { reference = try await gatewayEvents(server, path) } catch { report += "gateway \(path): \(error); "; return false }
                for store in stores {
                    let events = try events(store.handle, path)
                    if events != reference {
                        ok = false
                        report += "\(store.name) \(path): \(events.count) events vs \(reference.count), first difference \(zip(events, reference).first { $0 != $1 }.map { "\($0) vs \($1)" } ?? "in length"); "
                    }
                }
            }
            return ok
        }
        return (done, report)
    }
}
