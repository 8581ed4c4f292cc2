#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// MARK: - Deterministic randomness

/// Random tuples biased towards the cases that break order-preserving encodings: shared prefixes,
/// integers at byte-length boundaries, strings and bytes containing 0x00 and 0xFF.
private struct TupleGenerator {
    var rng: SplitMix64

    init(seed: UInt64) { rng = SplitMix64(seed: seed) }

    static let maxDepth = 3

    static let uintBoundaries: [UInt64] = {
        var values: [UInt64] = [0, 1, 2, UInt64.max, UInt64.max - 1, UInt64(Int64.max), UInt64(Int64.max) + 1]
        for k in 1...7 {
            let power = UInt64(1) << UInt64(8 * k)
            values += [power - 1, power, power + 1]
        }
        return values
    }()

    static let intBoundaries: [Int64] = {
        var values: [Int64] = [0, 1, -1, 2, -2, .min, .min + 1, .max, .max - 1]
        for k in 1...7 {
            let power = Int64(1) << Int64(8 * k)
            values += [power - 1, power, power + 1, -(power - 1), -power, -(power + 1)]
        }
        return values
    }()

    static let scalarPool: [Unicode.Scalar] = [
        "\u{0}", "a", "b", "z", "/", "\u{7F}", "\u{80}", "é", "\u{301}", "\u{7FF}", "\u{800}",
        "\u{D7FF}", "\u{E000}", "\u{FFFD}", "\u{FFFF}", "\u{10000}", "😀", "\u{10FFFF}",
    ]

    static let bytePool: [UInt8] = [0x00, 0x01, 0x02, 0x61, 0x7F, 0x80, 0xFE, 0xFF]

    mutating func int(in range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &rng) }
    mutating func chance(_ percent: Int) -> Bool { int(in: 0...99) < percent }

    mutating func uint() -> UInt64 {
        switch int(in: 0...9) {
        case 0...3: return Self.uintBoundaries.randomElement(using: &rng)!
        case 4: return UInt64(int(in: 0...300))
        default: return rng.next() >> UInt64(int(in: 0...63))
        }
    }

    mutating func signed() -> Int64 {
        switch int(in: 0...9) {
        case 0...3: return Self.intBoundaries.randomElement(using: &rng)!
        case 4: return Int64(int(in: -300...300))
        default:
            let magnitude = Int64(bitPattern: rng.next() >> UInt64(int(in: 1...63)))
            return chance(50) ? magnitude : -magnitude
        }
    }

    mutating func scalar() -> Unicode.Scalar {
        if chance(70) { return Self.scalarPool.randomElement(using: &rng)! }
        while true {
            if let scalar = Unicode.Scalar(UInt32.random(in: 0...0x10FFFF, using: &rng)) { return scalar }
        }
    }

    mutating func string() -> String {
        var scalars = String.UnicodeScalarView()
        for _ in 0..<int(in: 0...6) { scalars.append(scalar()) }
        return String(scalars)
    }

    mutating func byte() -> UInt8 {
        chance(60) ? Self.bytePool.randomElement(using: &rng)! : UInt8.random(in: 0...255, using: &rng)
    }

    mutating func bytes() -> [UInt8] {
        (0..<int(in: 0...6)).map { _ in byte() }
    }

    /// An element at nesting `depth` (a top-level element has depth 0; tuples nest to depth 3).
    mutating func element(depth: Int = 0) -> TupleElement {
        let kinds = depth < Self.maxDepth ? 0...4 : 0...3
        switch int(in: kinds) {
        case 0: return .bytes(bytes())
        case 1: return .string(string())
        case 2: return .uint(uint())
        case 3: return .int(signed())
        default: return .tuple(tuple(depth: depth + 1, maxCount: 4))
        }
    }

    mutating func tuple(depth: Int = 0, maxCount: Int = 5) -> [TupleElement] {
        (0..<int(in: 0...maxCount)).map { _ in element(depth: depth) }
    }

    /// A tuple related to `original`: equal, a prefix, an extension, or equal up to one tweaked
    /// element — or occasionally unrelated.
    mutating func related(to original: [TupleElement], depth: Int = 0) -> [TupleElement] {
        switch int(in: 0...9) {
        case 0: return original
        case 1: return Array(original.prefix(int(in: 0...original.count)))
        case 2: return Array(original.prefix(int(in: 0...original.count))) + tuple(depth: depth, maxCount: 3)
        case 3: return tuple(depth: depth)
        default:
            guard !original.isEmpty else { return tuple(depth: depth) }
            let index = int(in: 0...original.count - 1)
            var result = Array(original.prefix(index))
            result.append(tweak(original[index], depth: depth))
            if chance(50) {
                result += original.dropFirst(index + 1)
            } else {
                result += tuple(depth: depth, maxCount: 2)
            }
            return result
        }
    }

    /// A value close to `element`: usually the same kind, a step away.
    mutating func tweak(_ element: TupleElement, depth: Int) -> TupleElement {
        if chance(15) { return self.element(depth: depth) }
        switch element {
        case .uint(let value):
            switch int(in: 0...3) {
            case 0: return .uint(value &+ 1)
            case 1: return .uint(value &- 1)
            case 2: return .uint(Self.uintBoundaries.randomElement(using: &rng)!)
            default: return .uint(value ^ (1 << UInt64(int(in: 0...63))))
            }
        case .int(let value):
            switch int(in: 0...3) {
            case 0: return .int(value &+ 1)
            case 1: return .int(value &- 1)
            case 2: return .int(Self.intBoundaries.randomElement(using: &rng)!)
            default: return .int(0 &- value)
            }
        case .string(let value):
            var scalars = Array(value.unicodeScalars)
            switch int(in: 0...2) {
            case 0: scalars.append(scalar())
            case 1: if !scalars.isEmpty { scalars.removeLast() }
            default: if !scalars.isEmpty { scalars[scalars.count - 1] = scalar() } else { scalars.append(scalar()) }
            }
            var view = String.UnicodeScalarView()
            view.append(contentsOf: scalars)
            return .string(String(view))
        case .bytes(var value):
            switch int(in: 0...2) {
            case 0: value.append(byte())
            case 1: if !value.isEmpty { value.removeLast() }
            default: if !value.isEmpty { value[value.count - 1] = byte() } else { value.append(byte()) }
            }
            return .bytes(value)
        case .tuple(let value):
            return .tuple(related(to: value, depth: depth + 1))
        }
    }
}

// MARK: - Reference order, written independently of the encoding

private func rank(_ element: TupleElement) -> Int {
    switch element {
    case .bytes: return 0
    case .string: return 1
    case .tuple: return 2
    case .uint: return 3
    case .int: return 4
    }
}

private func compareValues<T: Comparable>(_ a: T, _ b: T) -> Int {
    a < b ? -1 : (a == b ? 0 : 1)
}

/// Lexicographic order of two sequences, a proper prefix first.
private func compareSequences<T: Comparable>(_ a: [T], _ b: [T]) -> Int {
    for (x, y) in zip(a, b) where x != y {
        return x < y ? -1 : 1
    }
    return compareValues(a.count, b.count)
}

private func referenceCompare(_ a: TupleElement, _ b: TupleElement) -> Int {
    switch (a, b) {
    case let (.bytes(x), .bytes(y)): return compareSequences(x, y)
    case let (.string(x), .string(y)):
        return compareSequences(x.unicodeScalars.map(\.value), y.unicodeScalars.map(\.value))
    case let (.tuple(x), .tuple(y)): return referenceCompare(x, y)
    case let (.uint(x), .uint(y)): return compareValues(x, y)
    case let (.int(x), .int(y)): return compareValues(x, y)
    default: return compareValues(rank(a), rank(b))
    }
}

private func referenceCompare(_ a: [TupleElement], _ b: [TupleElement]) -> Int {
    for (x, y) in zip(a, b) {
        let order = referenceCompare(x, y)
        if order != 0 { return order }
    }
    return compareValues(a.count, b.count)
}

/// memcmp order of two byte strings, the shorter first when one is a prefix of the other.
private func memcmpOrder(_ a: [UInt8], _ b: [UInt8]) -> Int {
    let common = min(a.count, b.count)
    let result = a.withUnsafeBytes { x in
        b.withUnsafeBytes { y in common == 0 ? 0 : memcmp(x.baseAddress!, y.baseAddress!, common) }
    }
    if result != 0 { return result < 0 ? -1 : 1 }
    return compareValues(a.count, b.count)
}

private func isLess(_ a: [UInt8], _ b: [UInt8]) -> Bool { memcmpOrder(a, b) < 0 }

// MARK: - Malformed inputs

private struct Malformed: Sendable, CustomTestStringConvertible {
    let bytes: [UInt8]
    let offset: Int
    let what: String

    init(_ what: String, _ bytes: [UInt8], offset: Int) {
        self.what = what
        self.bytes = bytes
        self.offset = offset
    }

    var testDescription: String { "\(what): \(TupleKey.hex(bytes))" }
}

private let malformedCases: [Malformed] = [
    Malformed("unknown type byte", [0x03], offset: 0),
    Malformed("unknown type byte after an element", [0x11, 0x01, 0x40], offset: 2),
    Malformed("terminator at top level", [0x00], offset: 0),
    Malformed("0xFF type byte", [0xFF], offset: 0),
    Malformed("type byte past the integers", [0x38], offset: 0),
    Malformed("bytes without terminator (empty)", [0x01], offset: 1),
    Malformed("bytes without terminator", [0x01, 0x61], offset: 2),
    Malformed("string without terminator", [0x02, 0x61, 0x62], offset: 3),
    Malformed("escape then end", [0x01, 0x61, 0x00, 0xFF], offset: 4),
    Malformed("nested tuple without terminator (empty)", [0x05], offset: 1),
    Malformed("nested tuple without terminator", [0x05, 0x11, 0x01], offset: 3),
    Malformed("inner tuple closed, outer not", [0x05, 0x05, 0x00], offset: 3),
    Malformed("0x00 then a non-type byte inside bytes", [0x01, 0x61, 0x00, 0x62], offset: 3),
    Malformed("0x00 then 0xFE inside bytes", [0x01, 0x00, 0xFE], offset: 2),
    Malformed("unsigned body past the end", [0x12, 0x01], offset: 2),
    Malformed("unsigned body missing", [0x18], offset: 1),
    Malformed("negative body missing", [0x27], offset: 1),
    Malformed("positive body past the end", [0x30, 0x7F, 0xFF], offset: 3),
    Malformed("non-minimal unsigned", [0x11, 0x00], offset: 1),
    Malformed("non-minimal unsigned, 2 bytes", [0x12, 0x00, 0x05], offset: 1),
    Malformed("non-minimal positive", [0x29, 0x00], offset: 1),
    Malformed("negative zero", [0x27, 0xFF], offset: 1),
    Malformed("non-minimal negative", [0x26, 0xFF, 0x00], offset: 1),
    Malformed("unsigned length 9", [0x19] + [UInt8](repeating: 0x01, count: 9), offset: 0),
    Malformed("integer length 15", [0x1F], offset: 0),
    Malformed("positive length 9", [0x31] + [UInt8](repeating: 0x01, count: 9), offset: 0),
    Malformed("positive length 15", [0x37], offset: 0),
    Malformed("positive 2^63", [0x30, 0x80, 0, 0, 0, 0, 0, 0, 0], offset: 1),
    Malformed("negative -(2^63 + 1)", [0x20, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE], offset: 1),
    Malformed("0xFF in a string", [0x02, 0xFF, 0x00], offset: 1),
    Malformed("truncated UTF-8 sequence", [0x02, 0x61, 0xC3, 0x00], offset: 2),
    Malformed("overlong UTF-8", [0x02, 0xC0, 0x80, 0x00], offset: 1),
    Malformed("UTF-8 surrogate", [0x02, 0xED, 0xA0, 0x80, 0x00], offset: 1),
    Malformed("UTF-8 above U+10FFFF", [0x02, 0xF4, 0x90, 0x80, 0x80, 0x00], offset: 1),
    Malformed("escaped 0x00 inside a UTF-8 sequence", [0x02, 0xC3, 0x00, 0xFF, 0x00], offset: 1),
    Malformed("lone UTF-8 continuation byte", [0x02, 0x61, 0x80, 0x00], offset: 2),
    Malformed("invalid UTF-8 inside a nested tuple", [0x05, 0x02, 0xC0, 0x00, 0x00], offset: 2),
    Malformed(
        "nesting too deep",
        [UInt8](repeating: 0x05, count: TupleKey.maxNestingDepth + 1)
            + [UInt8](repeating: 0x00, count: TupleKey.maxNestingDepth + 1),
        offset: TupleKey.maxNestingDepth),
]

// MARK: - Tests

@Suite("Tuple key encoding")
struct TupleKeyTests {
    @Test("golden bytes of single elements")
    func goldenBytes() {
        let cases: [(TupleElement, [UInt8])] = [
            (.uint(0), [0x10]),
            (.uint(1), [0x11, 0x01]),
            (.uint(255), [0x11, 0xFF]),
            (.uint(256), [0x12, 0x01, 0x00]),
            (.uint(.max), [0x18, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]),
            (.int(-1), [0x27, 0xFE]),
            (.int(0), [0x28]),
            (.int(1), [0x29, 0x01]),
            (.int(255), [0x29, 0xFF]),
            (.int(256), [0x2A, 0x01, 0x00]),
            (.int(-255), [0x27, 0x00]),
            (.int(-256), [0x26, 0xFE, 0xFF]),
            (.int(.max), [0x30, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]),
            (.int(.min), [0x20, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]),
            (.string(""), [0x02, 0x00]),
            (.string("a\0b"), [0x02, 0x61, 0x00, 0xFF, 0x62, 0x00]),
            (.string("é"), [0x02, 0xC3, 0xA9, 0x00]),
            (.bytes([]), [0x01, 0x00]),
            (.bytes([0x00, 0xFF]), [0x01, 0x00, 0xFF, 0xFF, 0x00]),
            (.tuple([]), [0x05, 0x00]),
            (.tuple([.uint(1), .string("x")]), [0x05, 0x11, 0x01, 0x02, 0x78, 0x00, 0x00]),
            (.tuple([.bytes([0x00])]), [0x05, 0x01, 0x00, 0xFF, 0x00, 0x00]),
        ]
        for (element, expected) in cases {
            #expect(TupleKey.encode([element]) == expected, "\(element)")
            #expect((try? TupleKey.decode(expected)) == [element], "\(element)")
        }
    }

    @Test("golden bytes of a time-series key")
    func goldenTimeSeriesKey() throws {
        let key = TupleKey.encode([.uint(3), .string("prices/AAPL"), .uint(42)])
        let expected: [UInt8] = [0x11, 0x03, 0x02] + Array("prices/AAPL".utf8) + [0x00, 0x11, 0x2A]
        #expect(key == expected)

        var encoder = TupleKeyEncoder()
        encoder.append(3 as UInt64)
        encoder.append("prices/AAPL")
        encoder.append(42 as UInt64)
        #expect(encoder.bytes == expected)

        var decoder = TupleKeyDecoder(key)
        #expect(try decoder.nextUInt() == 3)
        #expect(try decoder.nextString() == "prices/AAPL")
        #expect(decoder.offset == 15)
        #expect(try decoder.nextUInt() == 42)
        #expect(decoder.isAtEnd)
    }

    @Test("the encoder's overloads agree with the element encoding")
    func encoderOverloads() {
        let payload: [UInt8] = [0x61, 0x00, 0xFF, 0x00, 0x00, 0x62]
        let expected = TupleKey.encode([.bytes(payload)])

        var fromArray = TupleKeyEncoder()
        fromArray.append(bytes: payload)
        var fromSlice = TupleKeyEncoder()
        fromSlice.append(bytes: ([0xEE] + payload)[1...])
        var fromRaw = TupleKeyEncoder()
        payload.withUnsafeBytes { fromRaw.append(bytes: $0) }
        var fromLazy = TupleKeyEncoder()  // not contiguous: takes the element-by-element path
        fromLazy.append(bytes: payload.lazy.map { $0 })
        var fromElement = TupleKeyEncoder()
        fromElement.append(TupleElement.bytes(payload))

        #expect(expected == [0x01, 0x61, 0x00, 0xFF, 0xFF, 0x00, 0xFF, 0x00, 0xFF, 0x62, 0x00])
        for encoded in [fromArray, fromSlice, fromRaw, fromLazy, fromElement] {
            #expect(encoded.bytes == expected)
        }

        var tuple = TupleKeyEncoder()
        tuple.appendTuple([.int(-2), .tuple([])])
        #expect(tuple.bytes == [0x05, 0x27, 0xFD, 0x05, 0x00, 0x00])
    }

    @Test("random tuples round-trip and re-encode to the same bytes")
    func roundTrip() throws {
        var generator = TupleGenerator(seed: 0x5EED_0001)
        for _ in 0..<20_000 {
            let tuple = generator.tuple()
            let encoded = TupleKey.encode(tuple)
            let decoded = try TupleKey.decode(encoded)
            guard decoded == tuple, TupleKey.encode(decoded) == encoded else {
                Issue.record("round trip failed for \(tuple): \(TupleKey.hex(encoded)) decoded as \(decoded)")
                return
            }

            // The typed readers and the typed appenders agree with the element path.
            var decoder = TupleKeyDecoder(encoded)
            var encoder = TupleKeyEncoder()
            for element in tuple {
                switch element {
                case .uint(let value):
                    #expect(try decoder.nextUInt() == value)
                    encoder.append(value)
                case .int(let value):
                    #expect(try decoder.nextInt() == value)
                    encoder.append(signed: value)
                case .string(let value):
                    #expect(try decoder.nextString().utf8.elementsEqual(value.utf8))
                    encoder.append(value)
                case .bytes(let value):
                    #expect(try decoder.nextBytes() == value)
                    encoder.append(bytes: value)
                case .tuple(let value):
                    #expect(try decoder.next() == element)
                    encoder.appendTuple(value)
                }
            }
            #expect(decoder.isAtEnd)
            #expect(encoder.bytes == encoded)
        }
    }

    @Test("memcmp order of encodings equals the logical order of tuples")
    func orderMatchesReference() {
        var generator = TupleGenerator(seed: 0x5EED_0002)
        var sharedFirstElement = 0
        var equalPairs = 0
        for pair in 0..<60_000 {
            let a = generator.tuple()
            let b = pair % 5 == 0 ? generator.tuple() : generator.related(to: a)
            let expected = referenceCompare(a, b)
            let actual = memcmpOrder(TupleKey.encode(a), TupleKey.encode(b))
            guard expected == actual else {
                Issue.record("""
                    order mismatch: \(a) vs \(b): reference \(expected), memcmp \(actual)
                    \(TupleKey.hex(TupleKey.encode(a)))
                    \(TupleKey.hex(TupleKey.encode(b)))
                    """)
                return
            }
            if let x = a.first, let y = b.first, x == y { sharedFirstElement += 1 }
            if expected == 0 { equalPairs += 1 }
        }
        // The generator really does produce the hard cases.
        #expect(sharedFirstElement > 20_000)
        #expect(equalPairs > 1_000)
    }

    @Test("order of single elements near integer and escape boundaries")
    func elementOrderAtBoundaries() {
        let uints = TupleGenerator.uintBoundaries.sorted()
        for (x, y) in zip(uints, uints.dropFirst()) where x != y {
            #expect(isLess(TupleKey.encode([.uint(x)]), TupleKey.encode([.uint(y)])), "\(x) < \(y)")
        }
        let ints = TupleGenerator.intBoundaries.sorted()
        for (x, y) in zip(ints, ints.dropFirst()) where x != y {
            #expect(isLess(TupleKey.encode([.int(x)]), TupleKey.encode([.int(y)])), "\(x) < \(y)")
        }
        // Ascending in logical order; each adjacent pair must be ascending in memcmp order.
        let ladder: [[TupleElement]] = [
            [],
            [.bytes([])],
            [.bytes([]), .bytes([])],
            [.bytes([]), .int(.max)],
            [.bytes([0x00])],
            [.bytes([0x00]), .int(.max)],
            [.bytes([0x00, 0x00])],
            [.bytes([0x00, 0xFF])],
            [.bytes([0x01])],
            [.bytes([0xFF])],
            [.bytes([0xFF, 0xFF])],
            [.string("")],
            [.string("\0")],
            [.string("\0\0")],
            [.string("a")],
            [.string("a"), .uint(0)],
            [.string("a\0")],
            [.string("a\u{1}")],
            [.string("\u{7F}")],
            [.string("é")],
            [.string("\u{FFFF}")],
            [.string("😀")],
            [.tuple([])],
            [.tuple([]), .bytes([])],
            [.tuple([.bytes([])])],
            [.tuple([.tuple([])])],
            [.tuple([.int(.max)])],
            [.uint(0)],
            [.uint(.max)],
            [.int(.min)],
            [.int(-1)],
            [.int(0)],
            [.int(.max)],
        ]
        for (x, y) in zip(ladder, ladder.dropFirst()) {
            #expect(referenceCompare(x, y) < 0, "reference: \(x) < \(y)")
            #expect(isLess(TupleKey.encode(x), TupleKey.encode(y)), "\(x) < \(y)")
        }
    }

    @Test("malformed input throws at the right offset", arguments: malformedCases)
    fileprivate func malformed(_ input: Malformed) {
        do throws(TupleKeyError) {
            let elements = try TupleKey.decode(input.bytes)
            Issue.record("decoded as \(elements)")
        } catch {
            #expect(error.offset == input.offset, "\(error)")
            #expect(error.description.contains("offset \(input.offset)"))
        }
    }

    @Test("decoding accepts nesting up to the limit")
    func nestingLimit() throws {
        var element = TupleElement.uint(7)
        for _ in 0..<TupleKey.maxNestingDepth { element = .tuple([element]) }
        let encoded = TupleKey.encode([element])
        #expect(try TupleKey.decode(encoded) == [element])
    }

    @Test("valid boundary encodings decode")
    func validBoundaries() throws {
        #expect(try TupleKey.decode([0x02, 0xC3, 0xA9, 0x00]) == [.string("é")])
        #expect(try TupleKey.decode([0x02, 0xF4, 0x8F, 0xBF, 0xBF, 0x00]) == [.string("\u{10FFFF}")])
        #expect(try TupleKey.decode([0x02, 0xEF, 0xBF, 0xBF, 0x00]) == [.string("\u{FFFF}")])
        #expect(try TupleKey.decode([0x20, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]) == [.int(.min)])
        #expect(try TupleKey.decode([0x27, 0x00]) == [.int(-255)])
        #expect(try TupleKey.decode([0x01, 0x00, 0xFF, 0x00, 0x01, 0x00]) == [.bytes([0x00]), .bytes([])])
        #expect(try TupleKey.decode([]) == [])
    }

    @Test("typed readers reject other kinds without consuming")
    func typedReaders() throws {
        let key = TupleKey.encode([.string("s"), .uint(5), .int(-5), .bytes([1])])
        var decoder = TupleKeyDecoder(key)

        #expect(throws: TupleKeyError.self) { try decoder.nextUInt() }
        #expect(decoder.offset == 0)
        #expect(try decoder.nextString() == "s")

        #expect(throws: TupleKeyError.self) { try decoder.nextString() }
        #expect(throws: TupleKeyError.self) { try decoder.nextInt() }
        #expect(try decoder.nextUInt() == 5)

        #expect(throws: TupleKeyError.self) { try decoder.nextUInt() }
        #expect(try decoder.nextInt() == -5)
        #expect(try decoder.nextBytes() == [1])
        #expect(decoder.isAtEnd)

        do throws(TupleKeyError) {
            _ = try decoder.nextUInt()
            Issue.record("read past the end")
        } catch {
            #expect(error.offset == key.count)
        }
    }

    @Test("a failed read leaves the decoder where it was")
    func failedReadDoesNotMove() throws {
        let key: [UInt8] = [0x11, 0x01, 0x05, 0x11, 0x01]  // 1, then a tuple missing its terminator
        var decoder = TupleKeyDecoder(key)
        #expect(try decoder.nextUInt() == 1)
        do throws(TupleKeyError) {
            _ = try decoder.next()
            Issue.record("decoded a truncated tuple")
        } catch {
            #expect(error.offset == 5)
        }
        #expect(decoder.offset == 2)
        #expect(!decoder.isAtEnd)
    }

    @Test("a slice decodes with offsets relative to the slice")
    func sliceDecoding() {
        let buffer: [UInt8] = [0xAA, 0xAA, 0x11, 0x07, 0x03, 0xBB]
        var decoder = TupleKeyDecoder(buffer[2..<5])
        #expect((try? decoder.nextUInt()) == 7)
        #expect(decoder.offset == 2)
        do throws(TupleKeyError) {
            _ = try decoder.next()
            Issue.record("decoded type byte 0x03")
        } catch {
            #expect(error.offset == 2)
        }
    }

    @Test("random and mutated byte strings never trap; what decodes is canonical")
    func fuzz() {
        var generator = TupleGenerator(seed: 0x5EED_0003)
        let interesting: [UInt8] = [0x00, 0x01, 0x02, 0x05, 0x10, 0x11, 0x18, 0x19, 0x20, 0x27, 0x28, 0x29, 0x30, 0x31, 0x80, 0xC3, 0xFF]
        var decodedCount = 0
        var failedCount = 0
        for iteration in 0..<20_000 {
            var input: [UInt8]
            if iteration % 2 == 0 {
                input = (0..<generator.int(in: 0...24)).map { _ in
                    generator.chance(50) ? interesting.randomElement(using: &generator.rng)! : generator.byte()
                }
            } else {
                input = TupleKey.encode(generator.tuple())
                for _ in 0..<generator.int(in: 1...3) {
                    let position = input.isEmpty ? 0 : generator.int(in: 0...input.count - 1)
                    switch generator.int(in: 0...3) {
                    case 0 where !input.isEmpty: input[position] = interesting.randomElement(using: &generator.rng)!
                    case 1 where !input.isEmpty: input[position] = generator.byte()
                    case 2: input.insert(interesting.randomElement(using: &generator.rng)!, at: position)
                    default: input = Array(input.prefix(generator.int(in: 0...input.count)))
                    }
                }
            }

            do throws(TupleKeyError) {
                let elements = try TupleKey.decode(input)
                decodedCount += 1
                #expect(TupleKey.encode(elements) == input, "\(TupleKey.hex(input)) is not canonical")
            } catch {
                failedCount += 1
                #expect((0...input.count).contains(error.offset), "\(error) for \(TupleKey.hex(input))")
            }
            _ = TupleKey.describe(input)
        }
        #expect(decodedCount > 1_000)
        #expect(failedCount > 1_000)
    }

    @Test("prefixSuccessor examples")
    func prefixSuccessorExamples() {
        #expect(TupleKey.prefixSuccessor([0x01, 0x02]) == [0x01, 0x03])
        #expect(TupleKey.prefixSuccessor([0x00]) == [0x01])
        #expect(TupleKey.prefixSuccessor([0x01, 0xFF]) == [0x02])
        #expect(TupleKey.prefixSuccessor([0x01, 0xFE, 0xFF, 0xFF]) == [0x01, 0xFF])
        #expect(TupleKey.prefixSuccessor([0xFF, 0xFF]) == nil)
        #expect(TupleKey.prefixSuccessor([]) == nil)
        // All keys of keyspace 3: the encoding of (3) is [0x11, 0x03].
        #expect(TupleKey.prefixSuccessor(TupleKey.encode([.uint(3)])) == [0x11, 0x04])
    }

    @Test("prefixSuccessor bounds exactly the keys that start with the prefix")
    func prefixSuccessorProperty() {
        var generator = TupleGenerator(seed: 0x5EED_0004)
        func randomBytes(_ count: ClosedRange<Int>) -> [UInt8] {
            (0..<generator.int(in: count)).map { _ in generator.chance(30) ? 0xFF : generator.byte() }
        }
        for _ in 0..<20_000 {
            let prefix = randomBytes(0...5)
            let successor = TupleKey.prefixSuccessor(prefix)
            if let successor { #expect(isLess(prefix, successor)) }

            // A key that starts with the prefix sorts below the successor.
            let extended = prefix + randomBytes(0...5)
            if let successor { #expect(isLess(extended, successor), "\(extended) vs \(successor)") }

            // Any key: it starts with the prefix exactly when prefix <= key < successor.
            let key = generator.chance(50) ? Array(prefix.prefix(generator.int(in: 0...prefix.count))) + randomBytes(0...4) : randomBytes(0...6)
            let inRange = !isLess(key, prefix) && (successor.map { isLess(key, $0) } ?? true)
            #expect(key.starts(with: prefix) == inRange, "key \(key), prefix \(prefix)")
        }

        // The same for tuple keys: every extension of an encoded tuple sorts below its successor.
        for _ in 0..<5_000 {
            let head = generator.tuple(maxCount: 3)
            let prefix = TupleKey.encode(head)
            let key = TupleKey.encode(head + generator.tuple(maxCount: 3))
            if let successor = TupleKey.prefixSuccessor(prefix) {
                #expect(!isLess(key, prefix) && isLess(key, successor))
            }
        }
    }

    @Test("describe renders keys for people")
    func describe() {
        #expect(TupleKey.describe(TupleKey.encode([.uint(3), .string("prices/AAPL"), .uint(42)]))
            == #"(3, "prices/AAPL", 42)"#)
        let mixed: [TupleElement] = [
            .bytes([0x00, 0xFF]), .int(-5), .int(7), .int(0), .tuple([.uint(1), .string("x")]), .string("a\"b\0"),
        ]
        #expect(TupleKey.describe(TupleKey.encode(mixed)) == #"(x'00ff', -5, +7, +0, (1, "x"), "a\"b\0")"#)
        #expect(TupleKey.describe([]) == "()")
        #expect(TupleKey.describe([0x03, 0x01]) == "x'0301'")  // does not decode: raw hex
        #expect(TupleElement.tuple([.uint(1)]).description == "(1)")
    }

    @Test("element equality is byte-exact, not canonical equivalence")
    func byteExactEquality() {
        let composed = TupleElement.string("\u{E9}")
        let decomposed = TupleElement.string("e\u{301}")
        #expect("\u{E9}" == "e\u{301}")  // Swift's String equality would merge them
        #expect(composed != decomposed)
        #expect(Set([composed, decomposed]).count == 2)
        #expect(TupleKey.encode([composed]) != TupleKey.encode([decomposed]))
        #expect(TupleElement.tuple([composed]) != TupleElement.tuple([decomposed]))
        #expect(TupleElement.uint(1) != TupleElement.int(1))
        #expect(Set([TupleElement.string("ab"), .string("ab"), .bytes(Array("ab".utf8))]).count == 2)
    }
}
