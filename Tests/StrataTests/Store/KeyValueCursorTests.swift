import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// KeyValueCursor (Cursors/KeyValueCursor.swift) and the StrataCursor operations
// (Cursors/StrataCursor.swift and the adapters beside it): no call order traps, an ended cursor
// stays ended, a failed one keeps failing, and the Sequence-like methods read lazily.

private func b(_ s: String) -> [UInt8] { Array(s.utf8) }
private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

private struct Failure: Error, Equatable {}

/// A cursor over 0..<count that counts its reads and can fail at one element.
private final class Counting: StrataCursor {
    let count: Int
    let failAt: Int?
    var reads = 0
    private var position = 0

    init(_ count: Int, failAt: Int? = nil) {
        self.count = count
        self.failAt = failAt
    }

    func next() throws -> Int? {
        reads += 1
        if position == failAt { throw Failure() }
        guard position < count else { return nil }
        defer { position += 1 }
        return position
    }
}

@Suite("Key-value cursors")
struct KeyValueCursorTests {
    private func filled() throws -> (TemporaryDirectory, Store) {
        let tmp = try TemporaryDirectory()
        let store = try Store.open(at: tmp.url, options: StoreOptions(durability: .buffered))
        for k in ["a", "b", "c", "d", "e"] { try store.put(b(k), b(k.uppercased())) }
        return (tmp, store)
    }

    @Test func nextReturnsEachPairThenNilForever() throws {
        let (tmp, store) = try filled()
        defer { tmp.remove() }
        defer { try? store.close() }
        let cursor = try store.cursor(from: b("b"), to: b("e"))
        var seen: [String] = []
        while let (key, value) = try cursor.next() { seen.append(text(key) + text(value)) }
        #expect(seen == ["bB", "cC", "dD"])
        for _ in 0..<3 {
            #expect(try cursor.next() == nil)
            #expect(try cursor.nextUnsafe { _, _ in Issue.record("body called past the end") } == nil)
        }

        let empty = try store.cursor(from: b("x"))
        #expect(try empty.next() == nil && empty.next() == nil)
        let reversed = try store.cursor(to: b("c"), reverse: true)
        #expect(try reversed.collect().map { text($0.key) } == ["b", "a"] && reversed.next() == nil)
    }

    @Test func nextUnsafeLendsTheCurrentPair() throws {
        let (tmp, store) = try filled()
        defer { tmp.remove() }
        defer { try? store.close() }
        let cursor = try store.snapshot().cursor()
        // The first call moves to the first pair: no read of a "current" pair before it.
        #expect(try cursor.nextUnsafe { k, v in text(Array(k)) + text(Array(v)) } == "aA")
        #expect(try cursor.next().map { text($0.key) } == "b")
        // A body that throws consumes its pair; the cursor goes on after it.
        #expect(throws: Failure.self) { try cursor.nextUnsafe { _, _ in throw Failure() } }
        #expect(try cursor.nextUnsafe { k, _ in text(Array(k)) } == "d")
        var bytes = 0
        while try cursor.nextUnsafe({ k, v in bytes += k.count + v.count }) != nil {}
        #expect(bytes == 2)
    }

    @Test func sequenceLikeMethodsOnAKeyValueCursor() throws {
        let (tmp, store) = try filled()
        defer { tmp.remove() }
        defer { try? store.close() }
        let keys = { try store.cursor().map { text($0.key) } }
        #expect(try Array(keys()) == ["a", "b", "c", "d", "e"])
        #expect(try keys().filter { $0 != "c" }.collect() == ["a", "b", "d", "e"])
        #expect(try keys().compactMap { $0 == "b" ? nil : $0.uppercased() }.prefix(2).collect() == ["A", "C"])
        #expect(try keys().prefix(0).collect().isEmpty && keys().prefix(9).collect().count == 5)
        #expect(try keys().first(where: { $0 > "b" }) == "c" && keys().first(where: { $0 > "z" }) == nil)
        #expect(try keys().contains("d") && !keys().contains("z"))
        #expect(try keys().contains(where: { $0.hasPrefix("e") }))
        #expect(try keys().reduce("", +) == "abcde")
        #expect(try store.cursor().reduce(into: 0) { $0 += $1.value.count } == 5)
        var visited: [String] = []
        try keys().forEach { visited.append($0) }
        #expect(visited == ["a", "b", "c", "d", "e"])
        let pairs = try Array(store.cursor(from: b("d")))
        #expect(pairs.map { text($0.key) + text($0.value) } == ["dD", "eE"])

        // first(where:) leaves the cursor after the element it found.
        let cursor = try store.cursor()
        #expect(try cursor.first(where: { $0.key == b("b") })?.value == b("B"))
        #expect(try cursor.next()?.key == b("c"))

        // scan is the cursor's prefix.
        #expect(try store.scan(limit: 2).map { text($0.key) } == ["a", "b"] && store.scan(limit: 0).isEmpty)
        #expect(try store.scan(reverse: true, limit: 3).map { text($0.key) } == ["e", "d", "c"])
    }

    @Test func adaptersReadLazilyAndStayEnded() throws {
        let base = Counting(10)
        let firstThree = base.map { $0 * 2 }.prefix(3)
        #expect(base.reads == 0, "map and prefix read nothing until asked")
        #expect(try firstThree.next() == 0 && base.reads == 1)
        #expect(try firstThree.collect() == [2, 4] && base.reads == 3)
        #expect(try firstThree.next() == nil && base.reads == 3, "a finished prefix does not read its base")

        let short = Counting(2)
        let odd = short.filter { $0 % 2 == 1 }
        #expect(try odd.next() == 1 && odd.next() == nil && odd.next() == nil)
        let none = Counting(3).compactMap { _ in Int?.none }
        #expect(try none.next() == nil && none.next() == nil)
        let ended = Counting(1).prefix(5)
        #expect(try ended.collect() == [0] && ended.next() == nil)
    }

    @Test func errorsPropagateThroughEveryMethod() throws {
        #expect(throws: Failure.self) { try Counting(5, failAt: 2).collect() }
        #expect(throws: Failure.self) { try Array(Counting(5, failAt: 0)) }
        #expect(throws: Failure.self) { try Counting(5, failAt: 3).map { $0 }.filter { _ in true }.compactMap { $0 }.collect() }
        #expect(throws: Failure.self) { try Counting(5, failAt: 3).reduce(0, +) }
        #expect(throws: Failure.self) { try Counting(5, failAt: 1).forEach { _ in } }
        #expect(throws: Failure.self) { try Counting(5).map { v -> Int in if v == 2 { throw Failure() }; return v }.collect() }
        #expect(throws: Failure.self) { try Counting(5).first(where: { _ in throw Failure() }) }
        // A prefix that is already full does not read the base, so it does not meet its failure.
        #expect(try Counting(5, failAt: 2).prefix(2).collect() == [0, 1])
    }

    @Test func aFailedKeyValueCursorKeepsFailing() throws {
        let tmp = try TemporaryDirectory()
        defer { tmp.remove() }
        var options = StoreOptions(durability: .buffered)
        options.cacheSize = 0
        do {
            let store = try Store.open(at: tmp.url, options: options)
            var rng = SystemRandomNumberGenerator()
            for i in 0..<4_000 {
                try store.put(b(String(format: "k%05d", i)), (0..<200).map { _ in UInt8.random(in: 0...255, using: &rng) })
            }
            try store.compact()
            try store.close()
        }
        // Damage the middle of the segment's data blocks: their CRCs no longer match.
        let segments = try FileManager.default.contentsOfDirectory(atPath: tmp.url.path).filter { $0.hasSuffix(".seg") }
        let segment = tmp.url.appendingPathComponent(try #require(segments.first))
        var bytes = try Data(contentsOf: segment)
        let middle = bytes.count / 3
        for i in middle..<(middle + 64) { bytes[i] ^= 0xFF }
        try bytes.write(to: segment)

        let store = try Store.open(at: tmp.url, options: options)
        defer { try? store.close() }
        let cursor = try store.cursor()
        var failure: (any Error)?
        var read = 0
        while failure == nil {
            do {
                guard try cursor.next() != nil else { break }
                read += 1
            } catch {
                failure = error
            }
        }
        let error = try #require(failure, "the damaged block was read without an error (\(read) pairs)")
        #expect(read < 4_000)
        for _ in 0..<2 {
            do {
                _ = try cursor.next()
                Issue.record("a failed cursor read on")
            } catch let again {
                #expect("\(again)" == "\(error)", "the same error again")
            }
            #expect(throws: (any Error).self) { try cursor.nextUnsafe { _, _ in 0 } }
        }
    }
}
