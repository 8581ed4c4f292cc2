import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Channel records with valid encodings but extreme numbers — heads at or near 2^64 − 1, limits
// and retentions of 2^64 − 1, channel ids at the top of the id space, a collection id counter
// that is used up — as a damaged or crafted store could hold them. Every channel operation then
// returns or throws a `StrataError`; none traps.

/// Runs `body`, which may return or throw a `StrataError`; anything else fails the test.
private func survive(_ label: String, _ body: () throws -> Void) {
    FileHandle.standardError.write(Data("extreme record: \(label)\n".utf8))
    do {
        try body()
    } catch is StrataError {
        // Typed: fine.
    } catch {
        Issue.record("\(label) threw a non-Strata error: \(error)")
    }
}

/// Every read and write of a channel, each on its own.
private func exercise(_ store: Store, _ name: String, _ label: String) {
    survive("\(label): open") {
        let room = try store.channel(name, of: Int64.self)
        _ = room.options
        survive("\(label): history") { _ = try room.history(limit: 100) }
        survive("\(label): history bounded") { _ = try room.history(start: Timetoken(.max), end: .zero, limit: 100) }
        survive("\(label): count") { _ = try room.messageCount(since: .zero) }
        survive("\(label): publish") { _ = try room.publish(1) }
        survive("\(label): publish many") { _ = try room.publish(contentsOf: [1, 2, 3]) }
        survive("\(label): fetch") { _ = try store.fetchHistory(channels: [name], limit: 100) }
        survive("\(label): counts") { _ = try store.messageCounts(channels: [name], since: [.zero]) }
        survive("\(label): delete some") { try room.deleteMessages(start: Timetoken(.max), end: Timetoken(1)) }
        survive("\(label): delete all") { try room.deleteMessages() }
        survive("\(label): new options") {
            _ = try store.channel(name, of: Int64.self, options: ChannelOptions(retention: .seconds(1), limit: 1))
        }
    }
}

@Suite struct HistoryExtremeRecordTests {
    @Test func extremeHeadsAndDescriptors() throws {
        let heads: [(last: UInt64, floor: UInt64)] = [(0, .max), (.max, 0), (.max, .max), (.max - 1, .max - 1), (1 << 63, 1 << 63)]
        let options: [(limit: UInt64?, retention: UInt64?)] = [(nil, nil), (.max, nil), (nil, .max), (1, 1), (.max, .max),
                                                                (.max - 1, 1), (1 << 63, 1 << 63)]
        for head in heads {
            for o in options {
                let dir = try TemporaryDirectory()
                defer { dir.remove() }
                let label = "head \(head) limit \(String(describing: o.limit)) retention \(String(describing: o.retention))"
                do {
                    let store = try Store.open(at: dir.url)
                    let room = try store.channel("room", of: Int64.self)
                    try room.publish(contentsOf: [1, 2])
                    let id = room.state.keys.id
                    let descriptor = ChannelDescriptor(typeName: room.state.typeName, retention: o.retention, limit: o.limit)
                    var batch = WriteBatch()
                    Catalog.put(CatalogEntry(id: id, payload: descriptor.encoded), kind: .channel, name: "room", into: &batch)
                    batch.putRaw(ChannelHead.key(id), ChannelHead(last: head.last, floor: head.floor).encoded)
                    try store.engine.write(batch)
                    try store.close()
                }
                let store = try Store.open(at: dir.url)
                exercise(store, "room", label)
                try store.close()
            }
        }
    }

    @Test func channelIdsAtTheTop() throws {
        for id: UInt64 in [.max, .max - 1, 1 << 63] {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            do {
                let store = try Store.open(at: dir.url)
                let typeName = try store.channel("probe", of: Int64.self).state.typeName
                var batch = WriteBatch()
                let descriptor = ChannelDescriptor(typeName: typeName, retention: nil, limit: nil)
                Catalog.put(CatalogEntry(id: id, payload: descriptor.encoded), kind: .channel, name: "top", into: &batch)
                try store.engine.write(batch)
                try store.close()
            }
            let store = try Store.open(at: dir.url)
            exercise(store, "top", "channel id \(id)")
            // The channel just below keeps its messages apart from the top one's.
            survive("neighbours of \(id)") {
                let top = try store.channel("top", of: Int64.self)
                try top.publish(9)
                #expect(try store.channel("probe", of: Int64.self).history(limit: 100).messages.allSatisfy { $0.message != 9 })
            }
            try store.close()
        }
    }

    @Test func usedUpCollectionIds() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        _ = try store.channel("first", of: Int64.self)
        var batch = WriteBatch()
        var counter: [UInt8] = []
        Varint.append(UInt64.max, to: &counter)
        batch.putRaw(Catalog.counterKey, counter)
        try store.engine.write(batch)
        // Creating a collection needs a new id: a typed error, not an overflow.
        #expect(throws: StrataError.self) { try store.channel("second", of: Int64.self) }
        #expect(throws: StrataError.self) { try store.timeSeries("second", of: Int64.self) }
        #expect(throws: StrataError.self) { try store.documents("second") }
        // The existing one still works.
        #expect(try store.channel("first", of: Int64.self).publish(1) > .zero)
    }
}
