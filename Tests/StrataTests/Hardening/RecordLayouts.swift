import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat

// The record generator of issue 23, shared by the push keyspace (RecordGeneratorTests) and every
// other keyspace (LayoutGeneratorTests): a record layout of FORMAT.md is a key (fixed bytes and
// numbers) and a list of fields, each written as the record's own encoder writes it; the
// generated cases take each field in turn through its variants (0, 1, 2^63 − 1, 2^63, 2^64 − 1
// for numbers, NaN and ±∞ for floats, the field's own worst case), the others keeping their valid
// value, each key number through the extremes, and the record cut short and with a byte after.

/// One crafted record: a stored key and value, as given.
struct CraftedRecord: CustomTestStringConvertible, Sendable {
    let label: String
    let key: [UInt8]
    let value: [UInt8]
    var testDescription: String { label }
}

/// One field of a record layout, with its value.
enum Field: Sendable, CustomStringConvertible {
    case u8(UInt8)
    /// LEB128 (FORMAT.md §1).
    case varint(UInt64)
    /// A zigzag varint.
    case signed(Int64)
    /// Fixed 8 bytes, little-endian.
    case u64(UInt64)
    /// A `Double`'s bit pattern, 8 bytes little-endian.
    case f64(Double)
    /// `varint(byte count) ‖ UTF-8`.
    case string(String)
    /// `varint(byte count) ‖ bytes` that are not text (binary JSON).
    case blob([UInt8])
    /// `varint(count) ‖ string*`.
    case names([String])
    /// Fixed-size bytes (a digest, a collation key).
    case bytes([UInt8])
    /// The rest of the record (a value in its §13 form, a body, a bit stream).
    case rest([UInt8])
    /// Bytes written as they are (a field's worst case that the typed cases cannot spell).
    case raw([UInt8])

    func encode(into bytes: inout [UInt8]) {
        switch self {
        case .u8(let v): bytes.append(v)
        case .varint(let v): Varint.append(v, to: &bytes)
        case .signed(let v): Varint.append(ZigZag.encode(v), to: &bytes)
        case .u64(let v): LittleEndian.append(v, to: &bytes)
        case .f64(let d): LittleEndian.append(d.bitPattern, to: &bytes)
        case .string(let s): Varint.appendLengthPrefixed(s, to: &bytes)
        case .blob(let b):
            Varint.append(UInt64(b.count), to: &bytes)
            bytes += b
        case .names(let list):
            Varint.append(UInt64(list.count), to: &bytes)
            for s in list { Varint.appendLengthPrefixed(s, to: &bytes) }
        case .bytes(let b), .rest(let b), .raw(let b): bytes += b
        }
    }

    var description: String {
        switch self {
        case .u8(let v): "u8 \(v)"
        case .varint(let v): "varint \(v)"
        case .signed(let v): "signed \(v)"
        case .u64(let v): "u64 \(v)"
        case .f64(let d): "f64 \(d)"
        case .string(let s): s.count > 40 ? "string of \(s.utf8.count) bytes" : "string \(s.debugDescription)"
        case .blob(let b): "blob \(b.count > 24 ? "of \(b.count) bytes" : TupleKey.hex(b))"
        case .names(let n): "names \(n)"
        case .bytes(let b): "\(b.count) bytes \(TupleKey.hex(Array(b.prefix(16))))"
        case .rest(let b): "rest \(b.count > 24 ? "of \(b.count) bytes" : TupleKey.hex(b))"
        case .raw(let b): "raw \(TupleKey.hex(b))"
        }
    }

    private static let ones10: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]

    /// The values the field is tried with.
    var variants: [Field] {
        switch self {
        case .u8: return [0, 1, 2, 3, 255].map { .u8($0) }
        case .varint:
            // A varint past 64 bits (the tenth group above 1) after the extremes.
            return Hardening.extremes.map { .varint($0) } + [.raw([0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F])]
        case .signed: return [0, 1, -1, Int64.max, Int64.min, Int64.max - 1].map { .signed($0) }
        case .u64: return Hardening.extremes.map { .u64($0) }
        case .string: return [.string(""), .string(String(repeating: "a", count: 4_097)), .raw([1, 0xFF]), .raw(Self.ones10), .raw([50])]
        case .blob: return [.blob([]), .blob([0]), .blob(Array(repeating: 0xFF, count: 9)), .raw(Self.ones10), .raw([50])]
        case .names: return [.names([]), .names([""]), .names(["a b", "c"]), .raw(Self.ones10)]
        case .f64: return [Double.nan, .infinity, -.infinity, 0, -0.0, .greatestFiniteMagnitude, .leastNonzeroMagnitude, -1].map { .f64($0) }
        case .bytes(let b):
            return [.bytes(Array(repeating: 0, count: b.count)), .bytes(Array(repeating: 0xFF, count: b.count)), .raw(Array(b.dropLast()))]
        case .rest:
            return [.rest([]), .rest([0]), .rest([0xC3, 0x28]), .rest(Array(repeating: 0xFF, count: 7)),
                    .rest(Array(repeating: 0xFF, count: 9)), .rest([0x80] + Array(repeating: 0xFF, count: 16))]
        case .raw: return []
        }
    }

    /// A field of this field's kind read from `bytes` at `offset` (how a stored record is taken
    /// apart into the layout's valid values), nil when it does not read.
    func read(_ bytes: [UInt8], at offset: inout Int) -> Field? {
        func varint() -> UInt64? {
            var v: UInt64 = 0, shift: UInt64 = 0
            while offset < bytes.count, shift < 64 {
                let b = bytes[offset]
                offset += 1
                v |= UInt64(b & 0x7F) << shift
                if b < 0x80 { return v }
                shift += 7
            }
            return nil
        }
        func take(_ n: Int) -> [UInt8]? {
            guard n >= 0, n <= bytes.count - offset else { return nil }
            defer { offset += n }
            return Array(bytes[offset..<offset + n])
        }
        func le() -> UInt64? { take(8).map { $0.reversed().reduce(0) { $0 << 8 | UInt64($1) } } }
        func string() -> String? {
            guard let n = varint(), n <= Int.max, let b = take(Int(n)) else { return nil }
            return String(validating: b, as: UTF8.self)
        }
        switch self {
        case .u8: return take(1).map { .u8($0[0]) }
        case .varint: return varint().map { .varint($0) }
        case .signed: return varint().map { .signed(ZigZag.decode($0)) }
        case .u64: return le().map { .u64($0) }
        case .f64: return le().map { .f64(Double(bitPattern: $0)) }
        case .string: return string().map { .string($0) }
        case .blob:
            guard let n = varint(), n <= Int.max, let b = take(Int(n)) else { return nil }
            return .blob(b)
        case .names:
            guard let n = varint(), n < 1 << 20 else { return nil }
            var out: [String] = []
            for _ in 0..<n { guard let s = string() else { return nil }; out.append(s) }
            return .names(out)
        case .bytes(let b): return take(b.count).map { .bytes($0) }
        case .rest: return take(bytes.count - offset).map { .rest($0) }
        case .raw: return nil
        }
    }
}

/// A part of a layout's key: bytes as they are, or a tuple-encoded unsigned integer that the
/// generator varies.
enum KeyPart: Sendable {
    case bytes([UInt8])
    case number(UInt64)
}

/// A record layout: its key and its fields with their valid values.
struct Layout: Sendable {
    let name: String
    let key: [KeyPart]
    let fields: [Field]

    init(name: String, key: [KeyPart], fields: [Field]) {
        self.name = name
        self.key = key
        self.fields = fields
    }

    /// The layout of a stored record, its fields read by the kinds of `schema` (whose values are
    /// ignored); nil when the record does not read exactly so.
    init?(name: String, key: [KeyPart], stored: [UInt8], schema: [Field]) {
        var offset = 0
        var fields: [Field] = []
        for kind in schema {
            guard let f = kind.read(stored, at: &offset) else { return nil }
            fields.append(f)
        }
        guard offset == stored.count else { return nil }
        self.init(name: name, key: key, fields: fields)
        guard value(fields) == stored else { return nil }
    }

    func keyBytes(_ parts: [KeyPart]) -> [UInt8] {
        parts.flatMap { part -> [UInt8] in
            switch part {
            case .bytes(let b): b
            case .number(let n): Hardening.uint(n)
            }
        }
    }

    func value(_ fields: [Field]) -> [UInt8] {
        var bytes: [UInt8] = []
        for f in fields { f.encode(into: &bytes) }
        return bytes
    }

    /// The valid record, every field of it with each of its variants, every key number with each
    /// extreme, and the record cut short and with a byte after.
    var cases: [CraftedRecord] {
        let key = keyBytes(self.key), valid = value(fields)
        var out = [CraftedRecord(label: "\(name) valid", key: key, value: valid)]
        for (i, field) in fields.enumerated() {
            for v in field.variants {
                var changed = fields
                changed[i] = v
                out.append(CraftedRecord(label: "\(name) field \(i) = \(v)", key: key, value: value(changed)))
            }
        }
        for (i, part) in self.key.enumerated() {
            guard case .number = part else { continue }
            for n in Hardening.extremes {
                var parts = self.key
                parts[i] = .number(n)
                out.append(CraftedRecord(label: "\(name) key part \(i) = \(n)", key: keyBytes(parts), value: valid))
            }
        }
        if !valid.isEmpty { out.append(CraftedRecord(label: "\(name) cut short", key: key, value: Array(valid.dropLast()))) }
        out.append(CraftedRecord(label: "\(name) with a byte after", key: key, value: valid + [0]))
        return out
    }
}
