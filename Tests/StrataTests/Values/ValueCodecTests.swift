import Foundation
import Testing

@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

private struct Line: Codable, Equatable, Sendable {
    var sku: String
    var qty: Int
    var price: Double
}

private enum Status: String, Codable, Sendable { case open, paid }

private enum Event: Codable, Equatable, Sendable {
    case created(at: Date)
    case moved(from: Int, to: Int)
    case note(String)
    case cleared
}

private struct Order: Codable, Equatable, Sendable {
    var id: UUID
    var lines: [Line]
    var status: Status
    var note: String?
    var discount: Double?
    var placed: Date
    var attachment: Data
    var link: URL
    var totals: [String: Int64]
    var rows: [[String: JSON]]
    var events: [Event]
    var small: Int8
    var big: UInt64
    var ratio: Float
    var nested: [[Int]]
    var any: JSON
}

/// A class hierarchy that encodes through `superEncoder()`.
private class Base: Codable {
    let name: String
    init(name: String) { self.name = name }
}

private final class Derived: Base {
    let level: Int
    init(name: String, level: Int) {
        self.level = level
        super.init(name: name)
    }
    enum CodingKeys: String, CodingKey { case level }
    required init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        level = try container.decode(Int.self, forKey: .level)
        try super.init(from: container.superDecoder())
    }
    override func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(level, forKey: .level)
        try super.encode(to: container.superEncoder())
    }
}

private func sampleOrder(_ i: Int) -> Order {
    Order(
        id: UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!,
        lines: [Line(sku: "X\(i)", qty: i, price: 9.5), Line(sku: "Y", qty: -3, price: 1e300)],
        status: i % 2 == 0 ? .open : .paid,
        note: i % 3 == 0 ? nil : "n\(i)",
        discount: i % 2 == 0 ? nil : 0.25,
        placed: Date(timeIntervalSinceReferenceDate: 800_000_000.125 + Double(i)),
        attachment: Data((0..<i % 7).map { UInt8($0) }),
        link: URL(string: "https://example.com/o/\(i)?q=1")!,
        totals: ["a": Int64.max, "b": Int64.min],
        rows: [["k": 1, "v": [true, nil]], [:]],
        events: [.created(at: Date(timeIntervalSince1970: 1)), .moved(from: 1, to: 2), .note("é"), .cleared],
        small: -128,
        big: UInt64(Int64.max),
        ratio: 0.5,
        nested: [[], [1, 2], [3]],
        any: ["x": [1, 2.5, "s"]])
}

@Suite("Value codec")
struct ValueCodecTests {
    func roundTrip<V: Codable & Sendable>(_ value: V, _ codec: ValueCodec<V> = ValueCodec<V>()) throws -> (V, [UInt8]) {
        var bytes: [UInt8] = []
        try codec.encode(value, into: &bytes)
        let back = try bytes.withUnsafeBytes { try codec.decode($0) }
        return (back, bytes)
    }

    @Test("type names")
    func typeNames() throws {
        #expect(try ValueCodec<Int64>.typeName == "Int64")
        #expect(try ValueCodec<Double>.typeName == "Double")
        #expect(try ValueCodec<String>.typeName == "String")
        #expect(try ValueCodec<Data>.typeName == "Data")
        #expect(try ValueCodec<Bool>.typeName == "Bool")
        #expect(try ValueCodec<JSON>.typeName == "JSON")
        #expect(try ValueCodec<Int>.typeName == "Codable:.Int")
        #expect(try ValueCodec<[Double]>.typeName == "Codable:.Array<Double>")
    }

    @Test("native encodings are raw and untagged")
    func natives() throws {
        #expect(try roundTrip(21.5).1 == [0, 0, 0, 0, 0, 0x80, 0x35, 0x40])
        #expect(try roundTrip(Double.nan).0.isNaN)
        #expect(try roundTrip(-0.0).0.sign == .minus)
        #expect(try roundTrip(Int64(-2)).1 == [0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        #expect(try roundTrip(Int64.min).0 == Int64.min)
        #expect(try roundTrip(true).1 == [1])
        #expect(try roundTrip(false).1 == [0])
        #expect(try roundTrip("hé\u{0}😀").1 == Array("hé\u{0}😀".utf8))
        #expect(try roundTrip("hé\u{0}😀").0 == "hé\u{0}😀")
        #expect(try roundTrip(Data([1, 0, 255])).1 == [1, 0, 255])
        #expect(try roundTrip(Data()).0 == Data())
        let json: JSON = ["a": [1, 2.5]]
        #expect(try roundTrip(json).1 == json.binaryEncoded)
        #expect(try roundTrip(json).0 == json)
    }

    @Test("Codable values go through the binary JSON form")
    func codable() throws {
        for i in 0..<20 {
            let order = sampleOrder(i)
            let (back, bytes) = try roundTrip(order)
            #expect(back == order)
            #expect(try JSON(binary: bytes) == JSONValueEncoder().encode(order))
        }
        #expect(try roundTrip(42 as Int).0 == 42)
        #expect(try roundTrip([1.5, 2]).0 == [1.5, 2])
        #expect(try roundTrip(Optional<Int>.none).0 == nil)
        #expect(try roundTrip(Optional<Int>.some(3)).0 == 3)
        #expect(try roundTrip(Status.paid).0 == .paid)
        let derived = try JSONValueDecoder().decode(Derived.self, from: JSONValueEncoder().encode(Derived(name: "n", level: 2)))
        #expect(derived.name == "n" && derived.level == 2)
        #expect(try JSONValueEncoder().encode(Derived(name: "n", level: 2)) == ["level": 2, "super": ["name": "n"]])
    }

    @Test("the encoder maps the special types")
    func encoderMapping() throws {
        let date = Date(timeIntervalSinceReferenceDate: 5)
        #expect(try JSONValueEncoder().encode(date) == .date(date))
        #expect(try JSONValueEncoder().encode(Data([1, 2, 3])) == "AQID")
        #expect(try JSONValueEncoder().encode(URL(string: "https://a.b/c")!) == "https://a.b/c")
        #expect(try JSONValueEncoder().encode(Decimal(string: "12")!) == .int(12))
        #expect(try JSONValueEncoder().encode(Decimal(string: "1.25")!) == .double(1.25))
        #expect(try JSONValueEncoder().encode([7: "x"] as [Int: String]) == ["7": "x"])
        #expect(try JSONValueDecoder().decode([Int: String].self, from: ["7": "x"]) == [7: "x"])
        #expect(throws: StrataError.self) { try JSONValueEncoder().encode(UInt64.max) }
        do {
            _ = try JSONValueEncoder().encode(["a": [UInt64.max]])
        } catch let StrataError.invalidArgument(_, message) {
            #expect(message.hasPrefix("cannot encode"))
            #expect(message.contains("a[0]"), "\(message)")
        }
    }

    @Test("the decoder is lenient where JSON text loses types")
    func decoderLeniency() throws {
        let d = JSONValueDecoder()
        #expect(try d.decode(Int.self, from: .double(3)) == 3)
        #expect(try d.decode(Double.self, from: .int(3)) == 3)
        #expect(try d.decode(Date.self, from: "2001-01-01T00:00:05.000Z") == Date(timeIntervalSinceReferenceDate: 5))
        #expect(try d.decode(Date.self, from: "2001-01-01T00:00:05Z") == Date(timeIntervalSinceReferenceDate: 5))
        #expect(try d.decode(String.self, from: .date(Date(timeIntervalSinceReferenceDate: 0))) == "2001-01-01T00:00:00.000Z")
        #expect(try d.decode(Data.self, from: "AQID") == Data([1, 2, 3]))
        #expect(try d.decode(Decimal.self, from: .double(1.25)) == Decimal(string: "1.25")!)
        #expect(try d.decode(JSON.self, from: [1, "a"]) == [1, "a"])
        // A text round trip of an order decodes back to the same order.
        let order = sampleOrder(5)
        let text = try JSONValueEncoder().encode(order).jsonData()
        #expect(try d.decode(Order.self, from: JSON(parsing: text)) == order)
    }

    @Test("decoding errors are typeMismatch naming the coding path")
    func decodingErrors() {
        func message<T: Decodable>(_ type: T.Type, _ json: JSON) -> String? {
            do { _ = try JSONValueDecoder().decode(type, from: json); return nil } catch StrataError.typeMismatch(let m) { return m } catch { return "\(error)" }
        }
        let m1 = message([Line].self, [["sku": "a", "qty": 1, "price": 1], ["sku": "b", "qty": "x", "price": 1]])
        #expect(m1?.contains("[1].qty") == true, "\(m1 ?? "")")
        let m2 = message(Line.self, ["sku": "a", "qty": 1])
        #expect(m2?.contains("price") == true, "\(m2 ?? "")")
        #expect(message(Int8.self, 300) != nil)
        #expect(message(Int.self, 1.5) != nil)
        #expect(message(Bool.self, 1) != nil)
        #expect(message(Line.self, [1]) != nil)
        #expect(message(Data.self, "not base64!") != nil)
        #expect(message(Date.self, "yesterday") != nil)
        #expect(message(String.self, nil) != nil)
    }

    @Test("bad stored bytes are corrupted, never a trap")
    func corrupted() {
        func isCorrupted(_ body: () throws -> Void) -> Bool {
            do { try body(); return false } catch StrataError.corrupted(let file, _, _) { return file == "value" } catch { return false }
        }
        #expect(isCorrupted { _ = try [UInt8](repeating: 0, count: 7).withUnsafeBytes { try ValueCodec<Double>().decode($0) } })
        #expect(isCorrupted { _ = try [UInt8](repeating: 0, count: 9).withUnsafeBytes { try ValueCodec<Int64>().decode($0) } })
        #expect(isCorrupted { _ = try [UInt8]([2]).withUnsafeBytes { try ValueCodec<Bool>().decode($0) } })
        #expect(isCorrupted { _ = try [UInt8]([]).withUnsafeBytes { try ValueCodec<Bool>().decode($0) } })
        #expect(isCorrupted { _ = try [UInt8]([0xC3, 0x28]).withUnsafeBytes { try ValueCodec<String>().decode($0) } })
        #expect(isCorrupted { _ = try [UInt8]([0x09]).withUnsafeBytes { try ValueCodec<JSON>().decode($0) } })
        #expect(isCorrupted { _ = try [UInt8]([0x07, 0x05]).withUnsafeBytes { try ValueCodec<[Int]>().decode($0) } })
        var rng = SplitMix64(seed: 6)
        for _ in 0..<2000 {
            let bytes = (0..<rng.below(40)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            bytes.withUnsafeBytes { buffer in
                _ = try? ValueCodec<Line>().decode(buffer)
                _ = try? ValueCodec<String>().decode(buffer)
                _ = try? ValueCodec<JSON>().decode(buffer)
            }
        }
    }

    @Test("any stored value as JSON, from its type name")
    func jsonFromTypeName() throws {
        func json<V: Codable & Sendable>(_ value: V) throws -> JSON {
            var bytes: [UInt8] = []
            try ValueCodec<V>().encode(value, into: &bytes)
            return try bytes.withUnsafeBytes { try ValueCodec<V>.json(typeName: ValueCodec<V>.typeName, bytes: $0) }
        }
        #expect(try json(Int64(5)) == .int(5))
        #expect(try json(2.5) == .double(2.5))
        #expect(try json("s") == "s")
        #expect(try json(true) == true)
        #expect(try json(Data([1, 2, 3])) == "AQID")
        #expect(try json(["a": 1] as JSON) == ["a": 1])
        #expect(try json(Line(sku: "a", qty: 1, price: 2)) == ["sku": "a", "qty": 1, "price": 2.0])
        #expect(throws: StrataError.self) { try [UInt8]().withUnsafeBytes { try ValueCodec<Int64>.json(typeName: "Float80", bytes: $0) } }
    }
}
