// Mode `transactions` of the crash helper (Tests/StrataTests/Store/TransactionCrashTests.swift):
//
//   strata-crash-helper transactions <directory> <seed>
//
// Opens the store (synchronous durability, a small memtable so that flushes and compactions run)
// and runs transactions forever. Transaction i (continuing after the `last` field of document
// `counter` in database "tx") appends the event Double(i) to series "tx/events" (of Double),
// publishes i to channel "tx/messages" (of Int), saves document `e<i>` with fields i, event (the
// event's sequence) and timetoken (the message's), and saves or updates `counter` to last = i.
// By the seeded generator it may also:
//   - `pair`: append a second event i + 0.5 in the same transaction (field event2: its sequence);
//   - `edit`: edit an event acknowledged earlier in this run with the value i + 0.25 (fields
//     edit: the edit's sequence, edited: the original's);
//   - `throw` (instead of transaction i): stage the event -1, the message -1, the document
//     `bad<i>` and counter.last = -1, then throw from the body: none of it may appear.
// Before each transaction it prints `BEGIN <i> <kind>` (kind: plain, pair, edit, throw), after it
// returns `ACK <i> <kind>` (for `throw`, once the transaction threw as expected).

import Foundation
import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

private struct Abandon: Error {}

func runTransactions(directory: URL, arguments: [String]) -> Never {
    let usage = "usage: strata-crash-helper transactions <directory> <seed>"
    guard arguments.count == 1, let seed = UInt64(arguments[0]) else { fail(usage) }
    var options = StoreOptions(durability: .synchronous)
    options.memtableSize = 64 << 10
    options.segmentSize = 256 << 10
    options.blockSize = 4 << 10
    let store: Store
    var i: Int64 = 0
    var haveCounter = false
    do {
        store = try Store.open(at: directory, options: options)
        if let counter = try store.documents("tx").document(id: "counter") {
            haveCounter = true
            guard let last = counter["last"]?.int64Value else { fail("malformed counter \(counter.fields)") }
            i = last + 1
        }
    } catch {
        fail("open failed: \(error)")
    }
    var random = SplitMix64(state: seed ^ 0x7A5C ^ UInt64(i))
    // Sequences of original events acknowledged in this run (edit candidates).
    var originals: [UInt64] = []
    // A filler so that the memtable fills and flushes happen within a short run.
    let filler = String(repeating: "x", count: 200)
    while true {
        exitIfOrphaned()
        let roll = random.below(100)
        if roll < 8 {
            emit("BEGIN \(i) throw")
            do {
                try store.transaction { tx in
                    try tx.timeSeries("tx/events", of: Double.self).append(-1)
                    try tx.channel("tx/messages", of: Int.self).publish(-1)
                    let db = try tx.documents("tx")
                    try db.save(Document(id: "bad\(i)", fields: ["i": .int(i)]))
                    try db.save(Document(id: "counter", fields: ["last": .int(-1)]))
                    throw Abandon()
                }
                fail("transaction \(i): the body threw but the transaction returned")
            } catch is Abandon {
                // As meant.
            } catch {
                fail("transaction \(i) (throw) failed: \(error)")
            }
            emit("ACK \(i) throw")
            i += 1
            continue
        }
        let kind = roll < 25 ? "pair" : roll < 45 && !originals.isEmpty ? "edit" : "plain"
        let edited = kind == "edit" ? originals[random.below(originals.count)] : nil
        emit("BEGIN \(i) \(kind)")
        let first: UInt64
        do {
            first = try store.transaction { tx in
                let series = try tx.timeSeries("tx/events", of: Double.self)
                let event = try series.append(Double(i))
                let tt = try tx.channel("tx/messages", of: Int.self).publish(Int(i))
                var fields: [String: JSON] = [
                    "i": .int(i), "event": .int(Int64(event.sequence)), "timetoken": .int(Int64(tt.rawValue)),
                    "filler": .string(filler),
                ]
                if kind == "pair" {
                    fields["event2"] = .int(Int64(try series.append(Double(i) + 0.5).sequence))
                }
                if let edited {
                    fields["edit"] = .int(Int64(try series.edit(originalSequence: edited, value: Double(i) + 0.25).sequence))
                    fields["edited"] = .int(Int64(edited))
                }
                let db = try tx.documents("tx")
                try db.save(Document(id: "e\(i)", fields: fields))
                let counter = Document(id: "counter", fields: ["last": .int(i)])
                if haveCounter { try db.update(counter) } else { try db.save(counter) }
                return event.sequence
            }
        } catch {
            fail("transaction \(i) (\(kind)) failed: \(error)")
        }
        emit("ACK \(i) \(kind)")
        haveCounter = true
        originals.append(first)
        if originals.count > 64 { originals.removeFirst(originals.count - 64) }
        i += 1
    }
}
