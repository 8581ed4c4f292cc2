import Foundation
import Synchronization
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A clock the tests set by hand (in 100-ns units), to make timetokens predictable and to move
/// time back and forth.
final class HistoryTestClock: Sendable {
    private let units: Mutex<UInt64>

    init(_ start: UInt64 = 17_000_000_000_000_000) {
        units = Mutex(start)
    }

    var now: UInt64 { units.withLock { $0 } }

    func set(_ value: UInt64) { units.withLock { $0 = value } }

    func advance(_ by: UInt64) { units.withLock { $0 += by } }

    func back(_ by: UInt64) { units.withLock { $0 -= by } }

    /// The clock as `StoreOptions.clock` wants it. Doubles carry about 0.2 µs at these values, so
    /// the date is built from whole seconds plus the fraction to land on the intended unit.
    var function: @Sendable () -> Date {
        { [self] in
            let u = self.now
            return Date(timeIntervalSince1970: Double(u / 10_000_000) + (Double(u % 10_000_000) + 0.5) / 10_000_000)
        }
    }
}

enum HistoryTestStore {
    /// Options with a test clock; small memtables and segments when `small`, so flushes and
    /// compactions happen with little data.
    static func options(clock: HistoryTestClock? = nil, small: Bool = false,
                        durability: Durability = .buffered) -> StoreOptions {
        var o = StoreOptions(durability: durability)
        if let clock { o.clock = clock.function }
        if small {
            o.memtableSize = 64 << 10
            o.segmentSize = 64 << 10
            o.blockSize = 1024
            o.cacheSize = 256 << 10
        }
        return o
    }
}

/// What a history call must return, computed by brute force from the bound rules of API.md over
/// the sorted timetokens of a channel.
enum HistoryReference {
    static func selected(_ tts: [UInt64], start: UInt64?, end: UInt64?) -> [UInt64] {
        tts.filter { tt in
            switch (start, end) {
            case (nil, nil): return true
            case (let s?, nil): return tt < s                     // older than start
            case (nil, let e?): return tt >= e                    // end and newer
            case (let s?, let e?):                                // between, start excluded, end included
                if s < e { return tt > s && tt <= e }
                if s > e { return tt >= e && tt < s }
                return false
            }
        }
    }

    static func page(_ tts: [UInt64], start: UInt64?, end: UInt64?, limit: Int,
                     reverse: Bool) -> (timetokens: [UInt64], hasMore: Bool) {
        let all = selected(tts, start: start, end: end)
        let oldest = reverse && !(start != nil && end != nil)
        let page = oldest ? Array(all.prefix(limit)) : Array(all.suffix(limit))
        return (page, all.count > limit)
    }
}
