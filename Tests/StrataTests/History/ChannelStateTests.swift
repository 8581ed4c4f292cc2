import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// The head a channel's state keeps for the snapshot sequence it read it at (ChannelState.head):
// after any later write — publishes, transactions, range deletions, new options that move the
// floor — and for older snapshots, it is what a point read of the head gives.

@Suite struct ChannelStateTests {
    /// The head of `state` read from `snapshot` without the state's memo.
    private func storedHead(_ state: ChannelState, _ snapshot: Snapshot) throws -> ChannelHead {
        try ChannelHead.read(state.keys.id, in: snapshot)
    }

    /// The newest `limit` timetokens of the channel in `snapshot`, read with the stored head's floor.
    private func uncachedPage(_ state: ChannelState, _ snapshot: Snapshot, limit: Int) throws -> [UInt64] {
        let floor = try storedHead(state, snapshot).floor
        let page = try HistoryQuery.page(in: snapshot, keys: state.keys, floor: floor, start: nil, end: nil,
                                         limit: limit, reverse: false) { tt, value, publishers in
            try HistoryQuery.message(tt, value, keys: state.keys, codec: ValueCodec<String>(), publishers: &publishers)
        }
        return page.messages.map(\.timetoken.rawValue)
    }

    @Test(arguments: [UInt64(0xC4A5_0001), 0xC4A5_0002, 0xC4A5_0003])
    func cachedHeadMatchesTheStoredHead(seed: UInt64) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url, options: HistoryTestStore.options(small: true))
        defer { try? store.close() }
        var rng = SplitMix64(seed: seed)
        var room = try store.channel("room", of: String.self, options: ChannelOptions(limit: 20))
        var snapshots: [Snapshot] = []
        var checked = 0, floorMoves = 0
        var lastFloor: UInt64 = 0
        for step in 0..<400 {
            switch rng.below(10) {
            case 0, 1, 2:
                try room.publish(contentsOf: (0..<(1 + rng.below(6))).map { "m\(step)/\($0)" })
            case 3:
                try store.transaction { tx in
                    let c = try tx.channel("room", of: String.self)
                    try c.publish(contentsOf: (0..<(1 + rng.below(4))).map { "t\(step)/\($0)" })
                }
            case 4:
                let page = try room.history(limit: 100)
                if page.messages.count > 2 {
                    let i = rng.below(page.messages.count - 1)
                    try room.deleteMessages(start: page.messages[i].timetoken, end: page.messages[i + 1].timetoken)
                }
            case 5:
                room = try store.channel("room", of: String.self, options: ChannelOptions(limit: 5 + rng.below(30)))
            case 6:
                if snapshots.count >= 3 { snapshots.remove(at: rng.below(snapshots.count)) }
                snapshots.append(try store.engine.snapshot())
            case 7:
                try store.compact()
            default:
                break
            }
            // The current snapshot, twice (the second from the memo), then the kept older ones.
            let now = try store.engine.snapshot()
            for s in [now, now] + snapshots {
                #expect(try room.state.head(in: s) == storedHead(room.state, s), "seed \(seed) step \(step)")
                checked += 1
            }
            let page = try room.history(limit: 100).messages.map(\.timetoken.rawValue)
            #expect(page == (try uncachedPage(room.state, try store.engine.snapshot(), limit: 100)), "seed \(seed) step \(step)")
            let floor = try storedHead(room.state, now).floor
            if floor != lastFloor { floorMoves += 1 }
            lastFloor = floor
        }
        #expect(checked > 800)
        #expect(floorMoves > 20, "the limit moved the floor only \(floorMoves) times")
    }
}
