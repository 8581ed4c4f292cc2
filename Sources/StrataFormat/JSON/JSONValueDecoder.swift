import Foundation

/// Decodes a `Decodable` value from a ``JSON`` tree, without going through JSON text.
///
/// ```swift
/// struct Line: Codable { var sku: String; var qty: Int }
/// let line = try JSONValueDecoder().decode(Line.self, from: ["sku": "X1", "qty": 2])
/// ```
///
/// The mapping is the inverse of ``JSONValueEncoder``'s, and a little more lenient, so that values
/// that went through JSON text decode too: an integer type accepts an `int` or a `double` holding
/// an integer that fits; `Double` and `Float` accept any number; `String` accepts a `date` (as its
/// ISO 8601 string); `Date` accepts a `date` or an ISO 8601 `string` (with or without fractional
/// seconds); `Data` a base64 `string`; `URL` a `string`; `Decimal` any number; `JSON` anything.
package struct JSONValueDecoder {
    /// What the values being decoded find in their decoder's `userInfo`.
    package var userInfo: [CodingUserInfoKey: Any]

    package init(userInfo: [CodingUserInfoKey: Any] = [:]) {
        self.userInfo = userInfo
    }

    /// Decodes a `T` from `json`.
    ///
    /// - Throws: ``StrataError/typeMismatch(_:)`` naming the type, the coding path and what was
    ///   found, e.g. `cannot decode Order: expected Int at lines[1].qty, found a string`.
    package func decode<T: Decodable>(_ type: T.Type, from json: JSON) throws -> T {
        do {
            return try JSONValueDecoding.unbox(json, as: T.self, codingPath: [], userInfo: userInfo)
        } catch let error as StrataError {
            throw error
        } catch let error as DecodingError {
            throw StrataError.typeMismatch("cannot decode \(T.self): \(JSONValueDecoding.describe(error))")
        } catch {
            throw StrataError.typeMismatch("cannot decode \(T.self): \(error)")
        }
    }
}

/// The `Decoder` of ``JSONValueDecoder``.
package struct JSONValueDecoding: Decoder {
    package let value: JSON
    package let codingPath: [any CodingKey]
    package let userInfo: [CodingUserInfoKey: Any]

    package static func describe(_ error: DecodingError) -> String {
        switch error {
        case .typeMismatch(let type, let context):
            return "expected \(type) at \(JSONCodingPath.describe(context.codingPath)): \(context.debugDescription)"
        case .valueNotFound(let type, let context):
            return "expected \(type) at \(JSONCodingPath.describe(context.codingPath)): \(context.debugDescription)"
        case .keyNotFound(let key, let context):
            return "missing member \"\(key.stringValue)\" at \(JSONCodingPath.describe(context.codingPath))"
        case .dataCorrupted(let context):
            return "\(context.debugDescription) at \(JSONCodingPath.describe(context.codingPath))"
        @unknown default:
            return "\(error)"
        }
    }

    /// "a string", "an object"… for error messages.
    package static func kind(_ value: JSON) -> String {
        switch value {
        case .null: return "null"
        case .bool: return "a bool"
        case .int: return "an integer"
        case .double: return "a number"
        case .string: return "a string"
        case .date: return "a date"
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    package static func mismatch(_ type: Any.Type, _ value: JSON, _ path: @autoclosure () -> [any CodingKey]) -> DecodingError {
        if value.isNull {
            return .valueNotFound(type, .init(codingPath: path(), debugDescription: "found null"))
        }
        return .typeMismatch(type, .init(codingPath: path(), debugDescription: "found \(kind(value))"))
    }

    package static func bool(_ value: JSON, _ path: @autoclosure () -> [any CodingKey]) throws -> Bool {
        if case .bool(let b) = value { return b }
        throw mismatch(Bool.self, value, path())
    }

    package static func string(_ value: JSON, _ path: @autoclosure () -> [any CodingKey]) throws -> String {
        switch value {
        case .string(let s): return s
        case .date(let d): return JSON.iso8601String(d)
        default: throw mismatch(String.self, value, path())
        }
    }

    package static func double(_ value: JSON, _ path: @autoclosure () -> [any CodingKey]) throws -> Double {
        switch value {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: throw mismatch(Double.self, value, path())
        }
    }

    package static func float(_ value: JSON, _ path: @autoclosure () -> [any CodingKey]) throws -> Float {
        let d = try double(value, path())
        let f = Float(d)
        if f.isInfinite && d.isFinite {
            throw DecodingError.dataCorrupted(.init(codingPath: path(), debugDescription: "number \(d) does not fit in Float"))
        }
        return f
    }

    package static func integer<I: FixedWidthInteger>(_ value: JSON, as type: I.Type, _ path: @autoclosure () -> [any CodingKey]) throws -> I {
        let wide: Int64
        switch value {
        case .int(let i): wide = i
        case .double(let d):
            guard let i = Int64(exactly: d) else {
                throw DecodingError.dataCorrupted(.init(codingPath: path(), debugDescription: "number \(d) is not an integer that fits in \(I.self)"))
            }
            wide = i
        default: throw mismatch(I.self, value, path())
        }
        guard let result = I(exactly: wide) else {
            throw DecodingError.dataCorrupted(.init(codingPath: path(), debugDescription: "number \(wide) does not fit in \(I.self)"))
        }
        return result
    }

    package static func date(_ value: JSON, _ path: @autoclosure () -> [any CodingKey]) throws -> Date {
        switch value {
        case .date(let d): return d
        case .string(let s):
            if let d = try? Date(s, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) { return d }
            if let d = try? Date(s, strategy: Date.ISO8601FormatStyle()) { return d }
            throw DecodingError.dataCorrupted(.init(codingPath: path(), debugDescription: "string is not an ISO 8601 date"))
        default: throw mismatch(Date.self, value, path())
        }
    }

    /// Decodes any type at one place of the tree, mapping the special types.
    package static func unbox<T: Decodable>(_ value: JSON, as type: T.Type, codingPath: [any CodingKey],
                                            userInfo: [CodingUserInfoKey: Any] = [:]) throws -> T {
        if T.self == JSON.self, let json = value as? T { return json }
        if T.self == Date.self, let d = try date(value, codingPath) as? T { return d }
        if T.self == Data.self {
            guard let s = try? string(value, codingPath), let data = Data(base64Encoded: s) else {
                throw DecodingError.typeMismatch(Data.self, .init(codingPath: codingPath, debugDescription: "expected a base64 string, found \(kind(value))"))
            }
            if let d = data as? T { return d }
        }
        if T.self == URL.self {
            guard let url = URL(string: try string(value, codingPath)) else {
                throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "string is not a URL"))
            }
            if let u = url as? T { return u }
        }
        if T.self == Decimal.self {
            let decimal: Decimal
            switch value {
            case .int(let i): decimal = Decimal(i)
            case .double(let d): decimal = Decimal(string: d.description) ?? Decimal(d)
            default: throw mismatch(Decimal.self, value, codingPath)
            }
            if let d = decimal as? T { return d }
        }
        return try T(from: JSONValueDecoding(value: value, codingPath: codingPath, userInfo: userInfo))
    }

    package func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else {
            throw JSONValueDecoding.mismatch([String: JSON].self, value, codingPath)
        }
        return KeyedDecodingContainer(JSONKeyedDecoding<Key>(members: members, codingPath: codingPath, userInfo: userInfo))
    }

    package func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else {
            throw JSONValueDecoding.mismatch([JSON].self, value, codingPath)
        }
        return JSONUnkeyedDecoding(elements: elements, codingPath: codingPath, userInfo: userInfo)
    }

    package func singleValueContainer() throws -> any SingleValueDecodingContainer {
        JSONSingleValueDecoding(value: value, codingPath: codingPath, userInfo: userInfo)
    }

    package init(value: JSON, codingPath: [any CodingKey], userInfo: [CodingUserInfoKey: Any] = [:]) {
        self.value = value
        self.codingPath = codingPath
        self.userInfo = userInfo
    }
}

package struct JSONKeyedDecoding<Key: CodingKey>: KeyedDecodingContainerProtocol {
    package let members: [String: JSON]
    package let codingPath: [any CodingKey]
    package let userInfo: [CodingUserInfoKey: Any]

    package var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

    package func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    private func member(_ key: Key) throws -> JSON {
        guard let value = members[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no member \"\(key.stringValue)\""))
        }
        return value
    }

    package func decodeNil(forKey key: Key) throws -> Bool { try member(key).isNull }
    package func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try JSONValueDecoding.bool(member(key), codingPath + [key]) }
    package func decode(_ type: String.Type, forKey key: Key) throws -> String { try JSONValueDecoding.string(member(key), codingPath + [key]) }
    package func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try JSONValueDecoding.double(member(key), codingPath + [key]) }
    package func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try JSONValueDecoding.float(member(key), codingPath + [key]) }
    package func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try JSONValueDecoding.integer(member(key), as: type, codingPath + [key]) }
    package func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try JSONValueDecoding.integer(member(key), as: type, codingPath + [key]) }
    package func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try JSONValueDecoding.integer(member(key), as: type, codingPath + [key]) }
    package func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try JSONValueDecoding.integer(member(key), as: type, codingPath + [key]) }
    package func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try JSONValueDecoding.integer(member(key), as: type, codingPath + [key]) }
    package func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try JSONValueDecoding.integer(member(key), as: type, codingPath + [key]) }
    package func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try JSONValueDecoding.integer(member(key), as: type, codingPath + [key]) }
    package func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try JSONValueDecoding.integer(member(key), as: type, codingPath + [key]) }
    package func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try JSONValueDecoding.integer(member(key), as: type, codingPath + [key]) }
    package func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try JSONValueDecoding.integer(member(key), as: type, codingPath + [key]) }
    package func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try JSONValueDecoding.unbox(member(key), as: type, codingPath: codingPath + [key], userInfo: userInfo)
    }

    package func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try JSONValueDecoding(value: member(key), codingPath: codingPath + [key], userInfo: userInfo).container(keyedBy: type)
    }

    package func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try JSONValueDecoding(value: member(key), codingPath: codingPath + [key], userInfo: userInfo).unkeyedContainer()
    }

    package func superDecoder() throws -> any Decoder {
        JSONValueDecoding(value: members[JSONIndexKey.super.stringValue] ?? .null, codingPath: codingPath + [JSONIndexKey.super], userInfo: userInfo)
    }

    package func superDecoder(forKey key: Key) throws -> any Decoder {
        JSONValueDecoding(value: members[key.stringValue] ?? .null, codingPath: codingPath + [key], userInfo: userInfo)
    }

    package init(members: [String: JSON], codingPath: [any CodingKey], userInfo: [CodingUserInfoKey: Any] = [:]) {
        self.members = members
        self.codingPath = codingPath
        self.userInfo = userInfo
    }
}

package struct JSONUnkeyedDecoding: UnkeyedDecodingContainer {
    package let elements: [JSON]
    package let codingPath: [any CodingKey]
    package let userInfo: [CodingUserInfoKey: Any]
    package var currentIndex = 0

    package init(elements: [JSON], codingPath: [any CodingKey], userInfo: [CodingUserInfoKey: Any] = [:]) {
        self.elements = elements
        self.codingPath = codingPath
        self.userInfo = userInfo
    }

    package var count: Int? { elements.count }
    package var isAtEnd: Bool { currentIndex >= elements.count }

    private var path: [any CodingKey] { codingPath + [JSONIndexKey(intValue: currentIndex)] }

    private mutating func next(_ type: Any.Type) throws -> JSON {
        guard currentIndex < elements.count else {
            throw DecodingError.valueNotFound(type, .init(codingPath: path, debugDescription: "the array has only \(elements.count) elements"))
        }
        return elements[currentIndex]
    }

    /// Decodes the current element with `body`, which gets the element and its coding path
    /// (built only when used, for errors and nested containers), then moves on.
    private mutating func take<R>(_ type: Any.Type, _ body: (JSON, () -> [any CodingKey]) throws -> R) throws -> R {
        let value = try next(type)
        let codingPath = codingPath, index = currentIndex
        let result = try body(value, { codingPath + [JSONIndexKey(intValue: index)] })
        currentIndex += 1
        return result
    }

    package mutating func decodeNil() throws -> Bool {
        let value = try next(Never.self)
        if value.isNull { currentIndex += 1; return true }
        return false
    }

    package mutating func decode(_ type: Bool.Type) throws -> Bool { try take(type) { try JSONValueDecoding.bool($0, $1()) } }
    package mutating func decode(_ type: String.Type) throws -> String { try take(type) { try JSONValueDecoding.string($0, $1()) } }
    package mutating func decode(_ type: Double.Type) throws -> Double { try take(type) { try JSONValueDecoding.double($0, $1()) } }
    package mutating func decode(_ type: Float.Type) throws -> Float { try take(type) { try JSONValueDecoding.float($0, $1()) } }
    package mutating func decode(_ type: Int.Type) throws -> Int { try take(type) { try JSONValueDecoding.integer($0, as: type, $1()) } }
    package mutating func decode(_ type: Int8.Type) throws -> Int8 { try take(type) { try JSONValueDecoding.integer($0, as: type, $1()) } }
    package mutating func decode(_ type: Int16.Type) throws -> Int16 { try take(type) { try JSONValueDecoding.integer($0, as: type, $1()) } }
    package mutating func decode(_ type: Int32.Type) throws -> Int32 { try take(type) { try JSONValueDecoding.integer($0, as: type, $1()) } }
    package mutating func decode(_ type: Int64.Type) throws -> Int64 { try take(type) { try JSONValueDecoding.integer($0, as: type, $1()) } }
    package mutating func decode(_ type: UInt.Type) throws -> UInt { try take(type) { try JSONValueDecoding.integer($0, as: type, $1()) } }
    package mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try take(type) { try JSONValueDecoding.integer($0, as: type, $1()) } }
    package mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try take(type) { try JSONValueDecoding.integer($0, as: type, $1()) } }
    package mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try take(type) { try JSONValueDecoding.integer($0, as: type, $1()) } }
    package mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try take(type) { try JSONValueDecoding.integer($0, as: type, $1()) } }
    package mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try take(type) { [userInfo] in try JSONValueDecoding.unbox($0, as: type, codingPath: $1(), userInfo: userInfo) }
    }

    package mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try take([String: JSON].self) { [userInfo] in try JSONValueDecoding(value: $0, codingPath: $1(), userInfo: userInfo).container(keyedBy: type) }
    }

    package mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try take([JSON].self) { [userInfo] in try JSONValueDecoding(value: $0, codingPath: $1(), userInfo: userInfo).unkeyedContainer() }
    }

    package mutating func superDecoder() throws -> any Decoder {
        try take(JSON.self) { [userInfo] in JSONValueDecoding(value: $0, codingPath: $1(), userInfo: userInfo) }
    }
}

package struct JSONSingleValueDecoding: SingleValueDecodingContainer {
    package let value: JSON
    package let codingPath: [any CodingKey]
    package let userInfo: [CodingUserInfoKey: Any]

    package func decodeNil() -> Bool { value.isNull }
    package func decode(_ type: Bool.Type) throws -> Bool { try JSONValueDecoding.bool(value, codingPath) }
    package func decode(_ type: String.Type) throws -> String { try JSONValueDecoding.string(value, codingPath) }
    package func decode(_ type: Double.Type) throws -> Double { try JSONValueDecoding.double(value, codingPath) }
    package func decode(_ type: Float.Type) throws -> Float { try JSONValueDecoding.float(value, codingPath) }
    package func decode(_ type: Int.Type) throws -> Int { try JSONValueDecoding.integer(value, as: type, codingPath) }
    package func decode(_ type: Int8.Type) throws -> Int8 { try JSONValueDecoding.integer(value, as: type, codingPath) }
    package func decode(_ type: Int16.Type) throws -> Int16 { try JSONValueDecoding.integer(value, as: type, codingPath) }
    package func decode(_ type: Int32.Type) throws -> Int32 { try JSONValueDecoding.integer(value, as: type, codingPath) }
    package func decode(_ type: Int64.Type) throws -> Int64 { try JSONValueDecoding.integer(value, as: type, codingPath) }
    package func decode(_ type: UInt.Type) throws -> UInt { try JSONValueDecoding.integer(value, as: type, codingPath) }
    package func decode(_ type: UInt8.Type) throws -> UInt8 { try JSONValueDecoding.integer(value, as: type, codingPath) }
    package func decode(_ type: UInt16.Type) throws -> UInt16 { try JSONValueDecoding.integer(value, as: type, codingPath) }
    package func decode(_ type: UInt32.Type) throws -> UInt32 { try JSONValueDecoding.integer(value, as: type, codingPath) }
    package func decode(_ type: UInt64.Type) throws -> UInt64 { try JSONValueDecoding.integer(value, as: type, codingPath) }
    package func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONValueDecoding.unbox(value, as: type, codingPath: codingPath, userInfo: userInfo)
    }

    package init(value: JSON, codingPath: [any CodingKey], userInfo: [CodingUserInfoKey: Any] = [:]) {
        self.value = value
        self.codingPath = codingPath
        self.userInfo = userInfo
    }
}
