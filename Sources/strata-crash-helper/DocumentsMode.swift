// Mode `documents` of the crash helper (Tests/StrataTests/Documents/DocumentCrashTests.swift):
//
//   strata-crash-helper documents <directory> <seed>
//
// Opens the store (synchronous durability, small memtable so that flushes and compactions run)
// and the database `crash` with the index `byV` (the map below, repeated in the test), then
// writes forever. Batch b saves, in one `save(contentsOf:)`, 1…30 documents with ids `d<0…299>`
// and fields v (an int), g (a group string), b = b and a filler, plus the document `last` with
// b = b; some batches are followed by a deletion of one document. Before each write it prints
// `BEGIN <b>` (or `BEGIN DEL <id>`), after it returns `ACK <b>` (or `ACK DEL <id>`). Batch
// numbers continue after the `last` document's b.

import Foundation
import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The map of index `byV`: two rows per document with a `v`.
let crashIndexMap: DocumentIndex.Map = { doc, emit in
    if let v = doc["v"] {
        emit(v, doc["b"])
        emit([doc["g"] ?? nil, v], nil)
    }
}

func runDocuments(directory: URL, arguments: [String]) -> Never {
    let usage = "usage: strata-crash-helper documents <directory> <seed>"
    guard arguments.count == 1, let seed = UInt64(arguments[0]) else { fail(usage) }
    var options = StoreOptions(durability: .synchronous)
    options.memtableSize = 64 << 10
    options.segmentSize = 256 << 10
    options.blockSize = 4 << 10
    let db: DocumentDatabase
    var b: Int64 = 0
    do {
        let store = try Store.open(at: directory, options: options)
        db = try store.documents("crash", indexes: [DocumentIndex(name: "byV", version: "1", map: crashIndexMap)])
        if let last = try db.document(id: "last"), let stored = last["b"]?.int64Value { b = stored + 1 }
    } catch {
        fail("open failed: \(error)")
    }
    var random = SplitMix64(state: seed ^ 0xD0C5 ^ UInt64(b))
    while true {
        exitIfOrphaned()
        let n = 1 + random.below(30)
        var docs: [Document] = []
        for _ in 0..<n {
            var d = Document(id: "d\(random.below(300))")
            d["v"] = .int(Int64(random.below(50)))
            d["g"] = .string(["x", "y", "z"][random.below(3)])
            d["b"] = .int(b)
            d["filler"] = .string(String(repeating: "f", count: random.below(200)))
            docs.append(d)
        }
        var last = Document(id: "last")
        last["b"] = .int(b)
        docs.append(last)
        emit("BEGIN \(b)")
        do {
            try db.save(contentsOf: docs)
        } catch {
            fail("batch \(b) failed: \(error)")
        }
        emit("ACK \(b)")
        if random.below(4) == 0 {
            let id = "d\(random.below(300))"
            emit("BEGIN DEL \(id)")
            do {
                try db.delete(id: id)
            } catch StrataError.notFound {
                // Not there: fine.
            } catch {
                fail("delete of \(id) failed: \(error)")
            }
            emit("ACK DEL \(id)")
        }
        b += 1
    }
}
