import Foundation
import Testing
@testable import Strata
import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// kill -9 while `strata-crash-helper transactions` runs transactions over a series, a channel and
// a document database (Sources/strata-crash-helper/TransactionMode.swift): after each kill the
// reopened store holds every transaction whole or not at all, in all three collections.

@Suite("Transaction kill -9", .serialized)
struct TransactionCrashTests {
    /// 4 rounds by default; `STRATA_CRASH_TRIALS` raises the count for soak runs.
    static var rounds: Int {
        max(1, ProcessInfo.processInfo.environment["STRATA_CRASH_TRIALS"].flatMap { Int($0) } ?? 4)
    }

    /// What the store holds of the helper's transactions.
    struct Found {
        /// i → the sequence of its event Double(i).
        var events: [Int64: UInt64] = [:]
        /// i → the sequence of its second event i + 0.5.
        var seconds: [Int64: UInt64] = [:]
        /// Edit sequence → (original sequence, value).
        var edits: [UInt64: (original: UInt64, value: Double)] = [:]
        /// i → its message's timetoken.
        var messages: [Int64: UInt64] = [:]
        /// i → its document e<i>.
        var documents: [Int64: Document] = [:]
        var counter: Int64?
        var problems: [String] = []
    }

    /// All messages of `channel`, oldest first.
    static func allMessages(_ channel: Channel<Int>) throws -> [HistoryMessage<Int>] {
        var all: [HistoryMessage<Int>] = []
        var end: Timetoken?
        while true {
            let page = try channel.history(end: end, limit: HistoryPage<Int>.maximumLimit, reverse: true)
            all += page.messages
            guard page.hasMore, let last = page.messages.last else { return all }
            end = last.timetoken + 1
        }
    }

    static func read(_ store: Store) throws -> Found {
        var found = Found()
        let series = try store.timeSeries("tx/events", of: Double.self)
        let bounds = try series.bounds()
        let events = try series.query(.edits(.all)).events
        if events.map(\.sequence) != Array(0..<bounds.next) || bounds.firstRetained != 0 {
            found.problems.append("series sequences not contiguous: \(events.map(\.sequence)) of \(bounds)")
        }
        for e in events {
            if let original = e.originalEvent {
                found.edits[e.sequence] = (original.sequence, e.value)
            } else if e.value < 0 {
                found.problems.append("event \(e.sequence) = \(e.value) of a transaction whose body threw")
            } else if e.value == e.value.rounded(.down) {
                let i = Int64(e.value)
                if found.events.updateValue(e.sequence, forKey: i) != nil { found.problems.append("event of \(i) twice") }
            } else {
                let i = Int64(e.value.rounded(.down))
                if e.value != Double(i) + 0.5 { found.problems.append("event \(e.sequence) has value \(e.value)") }
                if found.seconds.updateValue(e.sequence, forKey: i) != nil { found.problems.append("second event of \(i) twice") }
            }
        }
        for m in try allMessages(try store.channel("tx/messages", of: Int.self)) {
            if m.message < 0 {
                found.problems.append("message \(m.timetoken) of a transaction whose body threw")
            } else if found.messages.updateValue(m.timetoken.rawValue, forKey: Int64(m.message)) != nil {
                found.problems.append("message of \(m.message) twice")
            }
        }
        let db = try store.documents("tx")
        let ids = try db.changes(since: 0).changes.filter { !$0.isDeletion }.map(\.id)
        for (id, doc) in try db.documents(ids: ids) {
            if id == "counter" {
                found.counter = doc["last"]?.int64Value
            } else if id.hasPrefix("e"), let i = Int64(id.dropFirst()) {
                found.documents[i] = doc
            } else {
                found.problems.append("document \(id) (of a transaction whose body threw?)")
            }
        }
        return found
    }

    /// Every transaction whole or absent: the problems found (none when consistent).
    static func check(_ f: Found) -> [String] {
        var problems = f.problems
        let inEvents = Set(f.events.keys), inMessages = Set(f.messages.keys), inDocuments = Set(f.documents.keys)
        if inEvents != inMessages || inEvents != inDocuments {
            problems.append("transactions in part: events only \(inEvents.subtracting(inDocuments).sorted()), "
                            + "messages only \(inMessages.subtracting(inDocuments).sorted()), "
                            + "documents only \(inDocuments.subtracting(inEvents.intersection(inMessages)).sorted())")
        }
        if f.counter != inDocuments.max() {
            problems.append("counter.last \(String(describing: f.counter)), largest transaction \(String(describing: inDocuments.max()))")
        }
        var editsClaimed: Set<UInt64> = []
        for (i, doc) in f.documents {
            if doc["i"]?.int64Value != i { problems.append("e\(i): field i \(String(describing: doc["i"]))") }
            if doc["event"]?.int64Value.map(UInt64.init) != f.events[i] {
                problems.append("e\(i): event \(String(describing: doc["event"])), series has \(String(describing: f.events[i]))")
            }
            if doc["timetoken"]?.int64Value.map(UInt64.init) != f.messages[i] {
                problems.append("e\(i): timetoken \(String(describing: doc["timetoken"])), channel has \(String(describing: f.messages[i]))")
            }
            if doc["event2"]?.int64Value.map(UInt64.init) != f.seconds[i] {
                problems.append("e\(i): event2 \(String(describing: doc["event2"])), series has \(String(describing: f.seconds[i]))")
            }
            if let edit = doc["edit"]?.int64Value.map(UInt64.init) {
                editsClaimed.insert(edit)
                let expected = doc["edited"]?.int64Value.map(UInt64.init)
                if let e = f.edits[edit] {
                    if e.original != expected || e.value != Double(i) + 0.25 {
                        problems.append("e\(i): edit \(edit) is \(e), expected an edit of \(String(describing: expected))")
                    }
                } else {
                    problems.append("e\(i): edit \(edit) missing from the series")
                }
            }
        }
        let strayEdits = Set(f.edits.keys).subtracting(editsClaimed)
        if !strayEdits.isEmpty { problems.append("edit events of no transaction: \(strayEdits.sorted())") }
        for i in f.seconds.keys where f.documents[i] == nil { problems.append("second event of \(i) without its transaction") }
        return problems
    }

    @Test("kill -9 mid-transaction: every transaction whole or absent across series, channel and database")
    func killDuringTransactions() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var random = SplitMix64(seed: 0x7A11)
        var acknowledged: Set<Int64> = []
        for round in 0..<Self.rounds {
            // Per round: a thrown transaction does not advance `counter`, so after the kill the
            // next round may give its index to a transaction that commits.
            var thrown: Set<Int64> = []
            let child = try CrashHelperProcess(["transactions", dir.path, String(0x7A00 + round)])
            let started = child.waitFor(timeout: 60) { $0.contains { $0.hasPrefix("ACK ") } }
            guard started else {
                child.killAndWait()
                Issue.record("round \(round): no acknowledgement; stderr: \(child.errorText)")
                return
            }
            child.run(for: 0.1 + Double(random.next() % 500) / 1000)
            let status = child.killAndWait()
            #expect(CrashHelperProcess.killed(status, by: SIGKILL), "round \(round): helper ended by itself: \(child.errorText)")
            var begun: Int64?
            for line in child.lines {
                let parts = line.split(separator: " ")
                guard parts.count == 3, let i = Int64(parts[1]) else { continue }
                if parts[0] == "BEGIN" { begun = i }
                if parts[0] == "ACK" { if parts[2] == "throw" { thrown.insert(i) } else { acknowledged.insert(i) } }
            }
            let store = try Store.open(at: dir.url)
            let found = try Self.read(store)
            try store.close()
            let problems = Self.check(found)
            #expect(problems.isEmpty, "round \(round): \(problems.joined(separator: "; "))")
            let present = Set(found.documents.keys)
            let lost = acknowledged.subtracting(present)
            #expect(lost.isEmpty, "round \(round): acknowledged transactions lost: \(lost.sorted())")
            #expect(present.isDisjoint(with: thrown), "round \(round): thrown transactions present: \(present.intersection(thrown).sorted())")
            // Nothing beyond the transaction in flight.
            if let begun, let largest = present.max() {
                #expect(largest <= begun, "round \(round): transaction \(largest) present, last begun \(begun)")
            }
            let report = try StoreVerifier.verify(storeAt: dir.path)
            #expect(report.faults.isEmpty, "round \(round): \(report.faults)")
        }
        #expect(!acknowledged.isEmpty)
    }
}
