import Foundation

/// How a collection stores a value of a `Codable` type (FORMAT.md §13.2).
///
/// The native types have compact raw encodings with no tag — the type is known from the
/// collection's catalog entry, which records ``typeName``:
///
/// | type     | bytes                                        |
/// | -------- | -------------------------------------------- |
/// | `Double` | 8, the IEEE 754 bit pattern, little-endian   |
/// | `Int64`  | 8, two's complement, little-endian           |
/// | `Bool`   | 1, `0x00` false or `0x01` true               |
/// | `String` | its UTF-8                                    |
/// | `Data`   | the bytes                                    |
/// | `JSON`   | the binary JSON form (§13.1)                 |
///
/// Every other type goes through ``JSONValueEncoder`` and is stored in the binary JSON form.
///
/// ```swift
/// let codec = ValueCodec<Double>()
/// var bytes: [UInt8] = []
/// try codec.encode(21.5, into: &bytes)                       // 8 bytes
/// let value = try bytes.withUnsafeBytes { try codec.decode($0) }   // 21.5
/// ```
@_spi(Layers) public struct ValueCodec<Value: Codable & Sendable>: Sendable {
    package init() {}

    /// The stable name stored in catalogs: `Int64`, `Double`, `String`, `Data`, `Bool`, `JSON`
    /// for the native types, otherwise `Codable:.` followed by the type's identity
    /// (``StoredTypeName``). A collection reopened with a value type that ``accepts(storedTypeName:)``
    /// refuses throws `typeMismatch`.
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` if a ``StoredValue`` names an empty identity.
    package static var typeName: String {
        get throws {
            if Value.self == Int64.self { return "Int64" }
            if Value.self == Double.self { return "Double" }
            if Value.self == String.self { return "String" }
            if Value.self == Data.self { return "Data" }
            if Value.self == Bool.self { return "Bool" }
            if Value.self == JSON.self { return "JSON" }
            return try StoredTypeName.of(Value.self)
        }
    }

    /// Whether a collection whose catalog entry stores `stored` holds `Value`s: `stored` is
    /// ``typeName``, or the module-qualified name an earlier build stored for the same type.
    ///
    /// - Throws: as ``typeName``.
    package static func accepts(storedTypeName stored: String) throws -> Bool {
        StoredTypeName.matches(stored: stored, type: Value.self, name: try typeName)
    }

    /// Appends the stored form of `value` to `out`.
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` when a non-native value cannot be encoded.
    @inlinable @inline(__always)
    package func encode(_ value: Value, into out: inout [UInt8]) throws {
        // The fixed-width types inline into the collections; the others are calls (`encodeOther`).
        if Value.self == Double.self {
            LittleEndian.append(unsafeBitCast(value, to: Double.self).bitPattern, to: &out)
        } else if Value.self == Int64.self {
            LittleEndian.append(UInt64(bitPattern: unsafeBitCast(value, to: Int64.self)), to: &out)
        } else if Value.self == Bool.self {
            out.append(unsafeBitCast(value, to: Bool.self) ? 1 : 0)
        } else {
            try encodeOther(value, into: &out)
        }
    }

    @usableFromInline func encodeOther(_ value: Value, into out: inout [UInt8]) throws {
        if Value.self == String.self {
            var s = unsafeBitCast(value, to: String.self)
            s.withUTF8 { out.append(contentsOf: $0) }
        } else if Value.self == Data.self {
            out.append(contentsOf: unsafeBitCast(value, to: Data.self))
        } else if Value.self == JSON.self {
            unsafeBitCast(value, to: JSON.self).appendBinary(to: &out)
        } else {
            try JSONValueEncoder().encode(value).appendBinary(to: &out)
        }
    }

    /// Decodes the stored form of one value that fills `bytes` exactly.
    ///
    /// - Throws: ``StrataError/corrupted(file:offset:reason:)`` with file `"value"` for bytes that
    ///   cannot be a stored value of this type; ``StrataError/typeMismatch(_:)`` when a non-native
    ///   value's JSON does not fit `Value`.
    @inlinable @inline(__always)
    package func decode(_ bytes: UnsafeRawBufferPointer) throws -> Value {
        if Value.self == Double.self {
            guard bytes.count == 8 else { throw Self.wrongSize(bytes.count, 8, "Double") }
            return unsafeBitCast(Double(bitPattern: LittleEndian.uint64(bytes, at: 0)), to: Value.self)
        } else if Value.self == Int64.self {
            guard bytes.count == 8 else { throw Self.wrongSize(bytes.count, 8, "Int64") }
            return unsafeBitCast(Int64(bitPattern: LittleEndian.uint64(bytes, at: 0)), to: Value.self)
        } else if Value.self == Bool.self {
            guard bytes.count == 1, bytes[0] <= 1 else {
                throw StrataError.corrupted(file: "value", offset: 0, reason: "a Bool is one byte 0x00 or 0x01")
            }
            return unsafeBitCast(bytes[0] == 1, to: Value.self)
        } else {
            return try decodeOther(bytes)
        }
    }

    @usableFromInline func decodeOther(_ bytes: UnsafeRawBufferPointer) throws -> Value {
        if Value.self == String.self {
            guard let s = UTF8Text.string(bytes) else {
                throw StrataError.corrupted(file: "value", offset: 0, reason: "invalid UTF-8 in a String value")
            }
            return unsafeBitCast(s, to: Value.self)
        } else if Value.self == Data.self {
            return unsafeBitCast(Data(bytes), to: Value.self)
        } else if Value.self == JSON.self {
            return unsafeBitCast(try JSON(binary: bytes), to: Value.self)
        } else {
            return try JSONValueDecoder().decode(Value.self, from: JSON(binary: bytes))
        }
    }

    @usableFromInline static func wrongSize(_ found: Int, _ expected: Int, _ type: String) -> StrataError {
        .corrupted(file: "value", offset: 0, reason: "a \(type) value is \(expected) bytes, found \(found)")
    }

    /// Any stored value as JSON, given only the type name its collection stored.
    ///
    /// `Int64` → `int`, `Double` → `double`, `String` → `string`, `Bool` → `bool`, `Data` → a
    /// base64 `string`, `JSON` and `Codable:…` (either form of ``StoredTypeName``) → the stored JSON.
    ///
    /// - Throws: ``StrataError/corrupted(file:offset:reason:)`` for malformed bytes,
    ///   ``StrataError/invalidArgument(argument:reason:)`` for a type name this build does not know.
    package static func json(typeName: String, bytes: UnsafeRawBufferPointer) throws -> JSON {
        switch typeName {
        case "Int64": return .int(try ValueCodec<Int64>().decode(bytes))
        case "Double": return .double(try ValueCodec<Double>().decode(bytes))
        case "String": return .string(try ValueCodec<String>().decode(bytes))
        case "Bool": return .bool(try ValueCodec<Bool>().decode(bytes))
        case "Data": return .string(Data(bytes).base64EncodedString())
        case "JSON": return try JSON(binary: bytes)
        default:
            if typeName.hasPrefix("Codable:") { return try JSON(binary: bytes) }
            throw StrataError.invalidArgument(argument: "typeName", reason: "unknown stored value type \"\(typeName)\"")
        }
    }
}
