import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A replicating channel's local half (FORMAT.md §15.7), without a gateway: provisional
/// publishes and their outbox, the pulled changes that finalize, move and delete them, and what
/// survives a reopen.
@Suite struct ChannelReplicaTests {
    static let base: UInt64 = 17_000_000_000_000_000
    static let url = "http://127.0.0.1:1/main"

    struct Fixture {
        let dir: TemporaryDirectory
        let clock = HistoryTestClock(ChannelReplicaTests.base)
        var store: Store

        init() throws {
            dir = try TemporaryDirectory()
            store = try Store.open(at: dir.url, options: HistoryTestStore.options(clock: clock))
        }

        mutating func reopen() throws {
            try store.close()
            store = try Store.open(at: dir.url, options: HistoryTestStore.options(clock: clock))
        }

        func room() throws -> Channel<String> { try store.channel("chat/room", of: String.self) }

        func close() {
            try? store.close()
            dir.remove()
        }
    }

    /// The final record of `text` (as the pull builds it).
    static func record(_ text: String, publisher: String? = nil) -> [UInt8] {
        var out: [UInt8] = []
        MessageRecord.encode(message: { $0 += Array(text.utf8) }, meta: nil, publisher: publisher, into: &out)
        return out
    }

    /// Every key of the channel in keyspace 11.
    static func replicaKeys(_ room: Channel<String>) throws -> [[UInt8]] {
        let state = room.state
        let snapshot = try state.history.engine.snapshot()
        let range = state.replica.all
        let cursor = snapshot.cursor(lower: range.start, upper: range.end)
        var keys: [[UInt8]] = []
        while try cursor.next() { keys.append(cursor.key) }
        return keys
    }

    static func uploadID(_ item: ChannelState.OutboxItem) -> [UInt8] {
        guard case .message(let id) = item.entry else { return [] }
        return id
    }

    @Test("a replicating channel's publishes are provisional, in the history at once, each with an outbox entry and a distinct upload id")
    func provisionalPublishes() throws {
        var f = try Fixture()
        defer { f.close() }
        let room = try f.room()
        try room.state.startReplicating()
        #expect(room.state.descriptor.replicated)
        let tts = try room.publish(contentsOf: ["a", "b", "c"])
        let page = try room.history()
        #expect(page.messages.map(\.message) == ["a", "b", "c"])
        #expect(page.messages.allSatisfy { $0.isProvisional })
        #expect(page.messages.map(\.timetoken) == tts)
        #expect(try room.messageCount(since: Timetoken(0)) == 3)
        let outbox = try room.state.outbox(after: nil, limit: 10)
        #expect(outbox.map(\.localTimetoken) == tts.map(\.rawValue))
        #expect(Set(outbox.map(Self.uploadID)).count == 3)
        // The catalog payload is layout 2, with the replicated flag.
        let entry = try #require(try f.store.catalog.entry(kind: .channel, name: "chat/room"))
        #expect(entry.payload.first == 2)
        try f.reopen()
        let again = try f.room()
        #expect(again.state.descriptor.replicated)
        #expect(try again.history().messages.allSatisfy { $0.isProvisional })
        #expect(try again.state.outbox(after: nil, limit: 10).count == 3)
        // A channel that never replicated publishes final messages, with layout 1.
        let plain = try f.store.channel("plain", of: String.self)
        try plain.publish("x")
        #expect(try plain.history().messages.map(\.isProvisional) == [false])
        #expect(try f.store.catalog.entry(kind: .channel, name: "plain")?.payload.first == 1)
    }

    @Test("the pulled copy of a provisional message replaces it in one commit: final at the gateway's timetoken, no record, outbox entry or upload id left")
    func pulledCopyFinalizes() throws {
        var f = try Fixture()
        defer { f.close() }
        let room = try f.room()
        try room.state.startReplicating()
        let tts = try room.publish(contentsOf: ["a", "b", "c"], publisher: "alice")
        let outbox = try room.state.outbox(after: nil, limit: 10)
        let finalTT = Self.base + 1_000_000
        let final = MessageRecord.final(try #require(outbox[1].record))
        #expect(final == (Self.record("b", publisher: "alice")))
        let keysBefore = try Self.replicaKeys(room).count
        try room.state.applyPulled([.message(timetoken: finalTT, uploadID: Self.uploadID(outbox[1]), record: final)],
                                   checkpoint: Self.url, since: 7)
        let messages = try room.history().messages
        #expect(messages.map(\.message) == ["a", "c", "b"])
        #expect(messages.map(\.timetoken.rawValue) == [tts[0].rawValue, tts[2].rawValue, finalTT])
        #expect(messages.map(\.isProvisional) == [true, true, false])
        // The provisional key is gone, and so are its outbox entry and upload id (two keys); the
        // checkpoint and the newest final timetoken are new (two keys).
        let snapshot = try room.state.history.engine.snapshot()
        #expect(try snapshot.get(room.state.keys.key(tts[1].rawValue)) == nil)
        #expect(try snapshot.get(room.state.replica.upload(Self.uploadID(outbox[1]))) == nil)
        #expect(try Self.replicaKeys(room).count == keysBefore - 2 + 2)
        #expect(try room.state.outbox(after: nil, limit: 10).map(\.localTimetoken) == [tts[0].rawValue, tts[2].rawValue])
        #expect(try room.state.pullCheckpoint(url: Self.url) == 7)
        #expect(try room.messageCount(since: Timetoken(0)) == 3)
        // Pulled again (a page read twice): nothing changes.
        try room.state.applyPulled([.message(timetoken: finalTT, uploadID: Self.uploadID(outbox[1]), record: final)],
                                   checkpoint: Self.url, since: 7)
        #expect(try room.history().messages.map(\.message) == ["a", "c", "b"])
        try f.reopen()
        let again = try f.room()
        #expect(try again.history().messages.map(\.isProvisional) == [true, true, false])
        #expect(try again.state.pullCheckpoint(url: Self.url) == 7)
    }

    @Test("a pulled message at a provisional message's timetoken takes that key; the provisional one moves to a new timetoken above, still in the outbox")
    func collisionMovesTheProvisionalMessage() throws {
        var f = try Fixture()
        defer { f.close() }
        let room = try f.room()
        try room.state.startReplicating()
        let mine = try room.publish("mine")
        let id = Self.uploadID(try room.state.outbox(after: nil, limit: 1)[0])
        try room.state.applyPulled([.message(timetoken: mine.rawValue, uploadID: nil, record: Self.record("theirs"))],
                                   checkpoint: Self.url, since: 1)
        let messages = try room.history().messages
        #expect(messages.map(\.message) == ["theirs", "mine"])
        #expect(messages.map(\.isProvisional) == [false, true])
        #expect(messages[1].timetoken.rawValue > mine.rawValue)
        let outbox = try room.state.outbox(after: nil, limit: 10)
        #expect(outbox.map(\.localTimetoken) == [messages[1].timetoken.rawValue])
        #expect(Self.uploadID(outbox[0]) == id)
        // Its pulled copy later finalizes it at its new place.
        try room.state.applyPulled([.message(timetoken: mine.rawValue + 50, uploadID: id, record: Self.record("mine"))],
                                   checkpoint: Self.url, since: 2)
        #expect(try room.history().messages.map(\.message) == ["theirs", "mine"])
        #expect(try room.history().messages.map(\.isProvisional) == [false, false])
        #expect(try room.state.outbox(after: nil, limit: 10).isEmpty)
        // The head covers the moved timetoken: a reopen's clock never gives it again.
        try f.reopen()
        let again = try f.room()
        #expect(try ChannelHead.read(again.state.keys.id, in: again.state.history.engine.snapshot()).last >= messages[1].timetoken.rawValue)
    }

    @Test("a pulled deletion removes the final messages of its range and keeps the provisional ones")
    func pulledDeletionKeepsProvisionalMessages() throws {
        let f = try Fixture()
        defer { f.close() }
        let room = try f.room()
        try room.state.startReplicating()
        try room.state.applyPulled([10, 20, 30].map { .message(timetoken: Self.base + $0, uploadID: nil, record: Self.record("f\($0)")) },
                                   checkpoint: Self.url, since: 3)
        f.clock.set(Self.base + 24)
        let provisional = try room.publish("p")
        #expect(provisional.rawValue > Self.base + 20 && provisional.rawValue < Self.base + 30)
        try room.state.applyPulled([.deletion(from: Self.base, until: Self.base + 31)], checkpoint: Self.url, since: 4)
        let messages = try room.history().messages
        #expect(messages.map(\.message) == ["p"])
        #expect(messages.map(\.isProvisional) == [true])
        #expect(try room.state.outbox(after: nil, limit: 10).count == 1)
        #expect(try room.messageCount(since: Timetoken(0)) == 1)
    }

    @Test("a local deletion in a replicating channel removes its range at once, withdraws the provisional messages of it and queues the range of final messages seen")
    func localDeletionQueuesTheRangeSeen() throws {
        let f = try Fixture()
        defer { f.close() }
        let room = try f.room()
        try room.state.startReplicating()
        try room.state.applyPulled([10, 20].map { .message(timetoken: Self.base + $0, uploadID: nil, record: Self.record("f\($0)")) },
                                   checkpoint: Self.url, since: 2)
        f.clock.set(Self.base + 25)
        try room.publish("p")
        try room.deleteMessages()
        #expect(try room.history().messages.isEmpty)
        let outbox = try room.state.outbox(after: nil, limit: 10)
        #expect(outbox.map(\.entry) == [.deletion(from: 0, until: Self.base + 21)])
        // Only the deletion's entry is left in keyspace 11 besides the checkpoint and the newest final.
        #expect(try Self.replicaKeys(room).count == 3)
        // Uploaded, it leaves the outbox.
        try room.state.removeFromOutbox(outbox)
        #expect(try room.state.outbox(after: nil, limit: 10).isEmpty)
    }

    @Test("messages held before the first replication become provisional, in commits of at most a chunk, and the mark comes with the last")
    func existingMessagesBecomeProvisional() throws {
        let f = try Fixture()
        defer { f.close() }
        let room = try f.room()
        let tts = try room.publish(contentsOf: (0..<2_500).map { "m\($0)" })
        try room.state.startReplicating(chunk: 1_000)
        #expect(room.state.descriptor.replicated)
        var all: [ChannelState.OutboxItem] = []
        var after: UInt64?
        while true {
            let items = try room.state.outbox(after: after, limit: 700)
            if items.isEmpty { break }
            all += items
            after = items.last?.localTimetoken
        }
        #expect(all.map(\.localTimetoken) == tts.map(\.rawValue))
        let page = try room.history(limit: 100)
        #expect(page.messages.allSatisfy { $0.isProvisional })
        #expect(page.messages.last?.message == "m2499")
        // Starting again converts nothing more.
        try room.state.startReplicating(chunk: 1_000)
        #expect(try room.state.outbox(after: nil, limit: 10_000).count == 2_500)
    }

    @Test("live messages streams get pulled messages of other stores once, and not this store's own finalized ones again")
    func liveStreamsGetPulledMessages() async throws {
        let f = try Fixture()
        defer { f.close() }
        let room = try f.room()
        try room.state.startReplicating()
        let stream = try room.messages()
        try await room.publish("mine")
        let id = Self.uploadID(try room.state.outbox(after: nil, limit: 1)[0])
        try room.state.applyPulled([
            .message(timetoken: Self.base + 500, uploadID: id, record: Self.record("mine")),
            .message(timetoken: Self.base + 600, uploadID: nil, record: Self.record("theirs")),
        ], checkpoint: Self.url, since: 2)
        var iterator = stream.makeAsyncIterator()
        let first = try await iterator.next()
        let second = try await iterator.next()
        #expect(first?.message == "mine" && first?.isProvisional == true)
        #expect(second?.message == "theirs" && second?.isProvisional == false && second?.timetoken.rawValue == Self.base + 600)
        try await room.publish("later")
        let third = try await iterator.next()
        #expect(third?.message == "later")
    }

    @Test("retention options stay per store: a channel with a limit keeps its newest pulled and provisional messages, and its count stays exact")
    func limitAppliesToPulledMessages() throws {
        var f = try Fixture()
        defer { f.close() }
        let room = try f.store.channel("chat/room", of: String.self, options: ChannelOptions(limit: 10))
        try room.state.startReplicating()
        try room.state.applyPulled((1...25).map { .message(timetoken: Self.base + UInt64($0) * 10, uploadID: nil, record: Self.record("f\($0)")) },
                                   checkpoint: Self.url, since: 25)
        #expect(try room.history().messages.map(\.message) == (16...25).map { "f\($0)" })
        #expect(try room.messageCount(since: Timetoken(0)) == 10)
        f.clock.set(Self.base + 1_000)
        try room.publish("p")
        #expect(try room.history().messages.map(\.message) == (17...25).map { "f\($0)" } + ["p"])
        try f.reopen()
        let again = try f.store.channel("chat/room", of: String.self, options: ChannelOptions(limit: 10))
        #expect(try again.messageCount(since: Timetoken(0)) == 10)
    }

    @Test("a replication record that is not exactly one varint is a corruption naming the channel, not a trap")
    func malformedReplicaRecords() throws {
        let f = try Fixture()
        defer { f.close() }
        let room = try f.room()
        try room.state.startReplicating()
        for bad: [UInt8] in [[], [0x80], [0x01, 0x00], [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]] {
            var batch = CommitBatch()
            batch.records.putRaw(room.state.replica.checkpoint(Self.url), bad)
            batch.records.putRaw(room.state.replica.lastFinal, bad)
            try room.state.history.engine.commit(batch)
            #expect {
                try room.state.pullCheckpoint(url: Self.url)
            } throws: { error in
                guard case StrataError.corrupted(let file, _, _) = error else { return false }
                return file.contains("chat/room") && file.contains("pull checkpoint")
            }
            #expect(throws: StrataError.self) { try room.state.lastFinal(in: room.state.history.engine.snapshot()) }
        }
        #expect(ReplicaCounter.encoded(.max) == [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01])
        #expect(try ReplicaCounter.decode(ReplicaCounter.encoded(.max), what: "t") == .max)
    }

    @Test("record and payload bytes: bit 2 carries 16 bytes of upload id, bit 3 is refused; layout 2 needs the replicated flag, layout 1 refuses it")
    func formats() throws {
        let final = Self.record("hi", publisher: "alice")
        let id = [UInt8](0..<16)
        let provisional = MessageRecord.provisional(final, uploadID: id)
        #expect(provisional == [0x06] + id + Array(final[1...]))
        #expect(MessageRecord.final(provisional) == final)
        try provisional.withUnsafeBytes { bytes in
            let parts = try MessageRecord.decode(bytes, what: "test")
            #expect(parts.uploadID.map(Array.init) == id)
            #expect(parts.publisher == "alice")
            #expect(Array(parts.message) == Array("hi".utf8))
        }
        var bad = final
        bad[0] |= 8
        #expect(throws: StrataError.self) { try bad.withUnsafeBytes { _ = try MessageRecord.decode($0, what: "test") } }
        var short = MessageRecord.provisional(final, uploadID: id)
        short.removeSubrange(1..<(1 + 16 + final.count - 1))
        #expect(throws: StrataError.self) { try short.withUnsafeBytes { _ = try MessageRecord.decode($0, what: "test") } }

        var descriptor = ChannelDescriptor(typeName: "String", options: ChannelOptions(limit: 5))
        descriptor.replicated = true
        let v2 = descriptor.encoded
        #expect(v2.first == 2)
        #expect(try ChannelDescriptor(decoding: v2, channel: "c") == descriptor)
        var v1WithFlag = v2
        v1WithFlag[0] = 1
        #expect(throws: StrataError.self) { try ChannelDescriptor(decoding: v1WithFlag, channel: "c") }
        descriptor.replicated = false
        var v2WithoutFlag = descriptor.encoded
        v2WithoutFlag[0] = 2
        #expect(throws: StrataError.self) { try ChannelDescriptor(decoding: v2WithoutFlag, channel: "c") }
        var v3 = v2
        v3[0] = 3
        #expect(throws: StrataError.self) { try ChannelDescriptor(decoding: v3, channel: "c") }

        #expect(ChannelOutboxEntry.message(uploadID: id).encoded == [1] + id)
        let deletion = ChannelOutboxEntry.deletion(from: 5, until: 300)
        #expect(try deletion.encoded.withUnsafeBytes { try ChannelOutboxEntry(decoding: $0, what: "t") } == deletion)
        for bytes: [UInt8] in [[2, 5, 5], [3], [1, 1, 2], [2, 1, 2, 0]] {
            #expect(throws: StrataError.self) { try bytes.withUnsafeBytes { _ = try ChannelOutboxEntry(decoding: $0, what: "t") } }
        }
    }

    @Test("a transaction's publish to a replicating channel wakes the push when the transaction commits, not before")
    func transactionWakesThePushAtCommit() throws {
        let f = try Fixture()
        defer { f.close() }
        let room = try f.room()
        try room.state.startReplicating()
        let before = room.state.outboxSignal.generation
        try f.store.transaction { tx in
            _ = try tx.channel("chat/room", of: String.self).publish("in a transaction")
            // Woken now, the push would find no outbox entry and wait a whole recheck.
            #expect(room.state.outboxSignal.generation == before)
        }
        #expect(room.state.outboxSignal.generation > before)
        #expect(try room.state.outbox(after: nil, limit: 10).count == 1)
    }
}
