import Foundation

/// Encodes an `Encodable` value into a ``JSON`` tree, without going through JSON text.
///
/// ```swift
/// struct Reading: Codable { var sensor: String; var at: Date; var values: [Double] }
/// let json = try JSONValueEncoder().encode(Reading(sensor: "t1", at: .now, values: [1.5]))
/// // .object(["sensor": .string("t1"), "at": .date(…), "values": .array([.double(1.5)])])
/// ```
///
/// Mapping: integers become `int` (an unsigned value above `Int64.max` is an error), `Float` and
/// `Double` become `double` (infinities and NaN are kept), `Date` becomes `date`, `Data` a base64
/// `string`, `URL` its absolute string, `Decimal` an `int` when it is an integer that fits, else a
/// `double`, and a `JSON` value itself. A value that encodes nothing becomes an empty object.
package struct JSONValueEncoder {
    /// What the values being encoded find in their encoder's `userInfo`.
    package var userInfo: [CodingUserInfoKey: Any]

    package init(userInfo: [CodingUserInfoKey: Any] = [:]) {
        self.userInfo = userInfo
    }

    /// Encodes `value`.
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` `"cannot encode <type>: <reason>"`.
    package func encode<T: Encodable>(_ value: T) throws -> JSON {
        do {
            return try JSONEncodingNode.encode(value, codingPath: [], userInfo: userInfo)
        } catch let error as StrataError {
            throw error
        } catch let EncodingError.invalidValue(_, context) {
            throw StrataError.invalidArgument(argument: "value", reason:
                "cannot encode \(T.self): \(context.debugDescription) at \(JSONCodingPath.describe(context.codingPath))")
        } catch {
            throw StrataError.invalidArgument(argument: "value", reason: "cannot encode \(T.self): \(error)")
        }
    }
}

/// Renders coding paths in errors: `lines[2].sku`.
package enum JSONCodingPath {
    package static func describe(_ path: [any CodingKey]) -> String {
        if path.isEmpty { return "the top level" }
        var out = ""
        for key in path {
            if let i = key.intValue, key.stringValue == "Index \(i)" || key is JSONIndexKey {
                out += "[\(i)]"
            } else {
                if !out.isEmpty { out += "." }
                out += key.stringValue
            }
        }
        return out
    }
}

/// A coding key of an array element or of a `super` encoder.
package struct JSONIndexKey: CodingKey {
    package var stringValue: String
    package var intValue: Int?
    package init(stringValue: String) { self.stringValue = stringValue; intValue = nil }
    package init(intValue: Int) { stringValue = "Index \(intValue)"; self.intValue = intValue }
    package static let `super` = JSONIndexKey(stringValue: "super")
}

/// The value under construction at one place of the tree: a leaf value, or an array or object
/// whose children may still be written to through nested containers.
package final class JSONEncodingNode {
    package enum Kind { case empty, value, array, object }
    package enum Child {
        case value(JSON)
        case node(JSONEncodingNode)
    }

    package var kind = Kind.empty
    package var value = JSON.null
    package var elements: [Child] = []
    package var members: [String: Child] = [:]

    package func resolve() -> JSON {
        switch kind {
        case .empty: return .object([:])
        case .value: return value
        case .array:
            return .array(elements.map { JSONEncodingNode.resolve($0) })
        case .object:
            var out: [String: JSON] = [:]
            out.reserveCapacity(members.count)
            for (key, child) in members { out[key] = JSONEncodingNode.resolve(child) }
            return .object(out)
        }
    }

    package static func resolve(_ child: Child) -> JSON {
        switch child {
        case .value(let v): return v
        case .node(let n): return n.resolve()
        }
    }

    /// The JSON of the types the encoder maps specially; nil for any other type.
    ///
    /// Metatype comparisons rather than dynamic casts: they fold away when `T` is known.
    @inlinable @inline(__always)
    package static func special<T: Encodable>(_ value: T) -> JSON? {
        if T.self == JSON.self { return unsafeBitCast(value, to: JSON.self) }
        if T.self == Date.self { return .date(unsafeBitCast(value, to: Date.self)) }
        if T.self == Data.self { return .string(unsafeBitCast(value, to: Data.self).base64EncodedString()) }
        if T.self == URL.self { return .string(unsafeBitCast(value, to: URL.self).absoluteString) }
        if T.self == Decimal.self {
            let decimal = unsafeBitCast(value, to: Decimal.self)
            let text = decimal.description
            if let i = Int64(text) { return .int(i) }
            return .double(Double(text) ?? NSDecimalNumber(decimal: decimal).doubleValue)
        }
        return nil
    }

    /// Encodes any value into a child of a container; the coding path is built only when the
    /// value has containers of its own.
    package static func child<T: Encodable>(_ value: T, codingPath: @autoclosure () -> [any CodingKey],
                                            userInfo: [CodingUserInfoKey: Any] = [:]) throws -> Child {
        if let json = special(value) { return .value(json) }
        let node = JSONEncodingNode()
        try value.encode(to: JSONValueEncoding(node: node, codingPath: codingPath(), userInfo: userInfo))
        if node.kind == .value { return .value(node.value) }
        return .node(node)
    }

    package static func encode<T: Encodable>(_ value: T, codingPath: [any CodingKey],
                                             userInfo: [CodingUserInfoKey: Any] = [:]) throws -> JSON {
        resolve(try child(value, codingPath: codingPath, userInfo: userInfo))
    }

    package static func integer<I: BinaryInteger>(_ value: I, codingPath: [any CodingKey]) throws -> JSON {
        guard let i = Int64(exactly: value) else {
            throw EncodingError.invalidValue(value, .init(codingPath: codingPath, debugDescription: "\(value) does not fit in Int64"))
        }
        return .int(i)
    }
}

/// The `Encoder` of ``JSONValueEncoder``.
package struct JSONValueEncoding: Encoder {
    package let node: JSONEncodingNode
    package let codingPath: [any CodingKey]
    package let userInfo: [CodingUserInfoKey: Any]

    package func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if node.kind != .object {
            node.kind = .object
            node.members = [:]
        }
        return KeyedEncodingContainer(JSONKeyedEncoding<Key>(node: node, codingPath: codingPath, userInfo: userInfo))
    }

    package func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if node.kind != .array {
            node.kind = .array
            node.elements = []
        }
        return JSONUnkeyedEncoding(node: node, codingPath: codingPath, userInfo: userInfo)
    }

    package func singleValueContainer() -> any SingleValueEncodingContainer {
        JSONSingleValueEncoding(node: node, codingPath: codingPath, userInfo: userInfo)
    }

    package init(node: JSONEncodingNode, codingPath: [any CodingKey], userInfo: [CodingUserInfoKey: Any] = [:]) {
        self.node = node
        self.codingPath = codingPath
        self.userInfo = userInfo
    }
}

package struct JSONKeyedEncoding<Key: CodingKey>: KeyedEncodingContainerProtocol {
    package let node: JSONEncodingNode
    package let codingPath: [any CodingKey]
    package let userInfo: [CodingUserInfoKey: Any]

    private func set(_ json: JSON, _ key: Key) { node.members[key.stringValue] = .value(json) }

    package mutating func encodeNil(forKey key: Key) throws { set(.null, key) }
    package mutating func encode(_ value: Bool, forKey key: Key) throws { set(.bool(value), key) }
    package mutating func encode(_ value: String, forKey key: Key) throws { set(.string(value), key) }
    package mutating func encode(_ value: Double, forKey key: Key) throws { set(.double(value), key) }
    package mutating func encode(_ value: Float, forKey key: Key) throws { set(.double(Double(value)), key) }
    package mutating func encode(_ value: Int, forKey key: Key) throws { set(.int(Int64(value)), key) }
    package mutating func encode(_ value: Int8, forKey key: Key) throws { set(.int(Int64(value)), key) }
    package mutating func encode(_ value: Int16, forKey key: Key) throws { set(.int(Int64(value)), key) }
    package mutating func encode(_ value: Int32, forKey key: Key) throws { set(.int(Int64(value)), key) }
    package mutating func encode(_ value: Int64, forKey key: Key) throws { set(.int(value), key) }
    package mutating func encode(_ value: UInt, forKey key: Key) throws {
        set(try JSONEncodingNode.integer(value, codingPath: codingPath + [key]), key)
    }
    package mutating func encode(_ value: UInt8, forKey key: Key) throws { set(.int(Int64(value)), key) }
    package mutating func encode(_ value: UInt16, forKey key: Key) throws { set(.int(Int64(value)), key) }
    package mutating func encode(_ value: UInt32, forKey key: Key) throws { set(.int(Int64(value)), key) }
    package mutating func encode(_ value: UInt64, forKey key: Key) throws {
        set(try JSONEncodingNode.integer(value, codingPath: codingPath + [key]), key)
    }
    package mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        node.members[key.stringValue] = try JSONEncodingNode.child(value, codingPath: codingPath + [key], userInfo: userInfo)
    }

    package mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        let child = JSONEncodingNode()
        child.kind = .object
        node.members[key.stringValue] = .node(child)
        return KeyedEncodingContainer(JSONKeyedEncoding<NestedKey>(node: child, codingPath: codingPath + [key], userInfo: userInfo))
    }

    package mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = JSONEncodingNode()
        child.kind = .array
        node.members[key.stringValue] = .node(child)
        return JSONUnkeyedEncoding(node: child, codingPath: codingPath + [key], userInfo: userInfo)
    }

    package mutating func superEncoder() -> any Encoder {
        let child = JSONEncodingNode()
        node.members[JSONIndexKey.super.stringValue] = .node(child)
        return JSONValueEncoding(node: child, codingPath: codingPath + [JSONIndexKey.super], userInfo: userInfo)
    }

    package mutating func superEncoder(forKey key: Key) -> any Encoder {
        let child = JSONEncodingNode()
        node.members[key.stringValue] = .node(child)
        return JSONValueEncoding(node: child, codingPath: codingPath + [key], userInfo: userInfo)
    }

    package init(node: JSONEncodingNode, codingPath: [any CodingKey], userInfo: [CodingUserInfoKey: Any] = [:]) {
        self.node = node
        self.codingPath = codingPath
        self.userInfo = userInfo
    }
}

package struct JSONUnkeyedEncoding: UnkeyedEncodingContainer {
    package let node: JSONEncodingNode
    package let codingPath: [any CodingKey]
    package let userInfo: [CodingUserInfoKey: Any]
    package var count: Int { node.elements.count }

    private var nextPath: [any CodingKey] { codingPath + [JSONIndexKey(intValue: node.elements.count)] }
    private func add(_ json: JSON) { node.elements.append(.value(json)) }

    package mutating func encodeNil() throws { add(.null) }
    package mutating func encode(_ value: Bool) throws { add(.bool(value)) }
    package mutating func encode(_ value: String) throws { add(.string(value)) }
    package mutating func encode(_ value: Double) throws { add(.double(value)) }
    package mutating func encode(_ value: Float) throws { add(.double(Double(value))) }
    package mutating func encode(_ value: Int) throws { add(.int(Int64(value))) }
    package mutating func encode(_ value: Int8) throws { add(.int(Int64(value))) }
    package mutating func encode(_ value: Int16) throws { add(.int(Int64(value))) }
    package mutating func encode(_ value: Int32) throws { add(.int(Int64(value))) }
    package mutating func encode(_ value: Int64) throws { add(.int(value)) }
    package mutating func encode(_ value: UInt) throws { add(try JSONEncodingNode.integer(value, codingPath: nextPath)) }
    package mutating func encode(_ value: UInt8) throws { add(.int(Int64(value))) }
    package mutating func encode(_ value: UInt16) throws { add(.int(Int64(value))) }
    package mutating func encode(_ value: UInt32) throws { add(.int(Int64(value))) }
    package mutating func encode(_ value: UInt64) throws { add(try JSONEncodingNode.integer(value, codingPath: nextPath)) }
    package mutating func encode<T: Encodable>(_ value: T) throws {
        let child = try JSONEncodingNode.child(value, codingPath: nextPath, userInfo: userInfo)
        node.elements.append(child)
    }

    package mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let path = nextPath
        let child = JSONEncodingNode()
        child.kind = .object
        node.elements.append(.node(child))
        return KeyedEncodingContainer(JSONKeyedEncoding<NestedKey>(node: child, codingPath: path, userInfo: userInfo))
    }

    package mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let path = nextPath
        let child = JSONEncodingNode()
        child.kind = .array
        node.elements.append(.node(child))
        return JSONUnkeyedEncoding(node: child, codingPath: path, userInfo: userInfo)
    }

    package mutating func superEncoder() -> any Encoder {
        let path = nextPath
        let child = JSONEncodingNode()
        node.elements.append(.node(child))
        return JSONValueEncoding(node: child, codingPath: path, userInfo: userInfo)
    }

    package init(node: JSONEncodingNode, codingPath: [any CodingKey], userInfo: [CodingUserInfoKey: Any] = [:]) {
        self.node = node
        self.codingPath = codingPath
        self.userInfo = userInfo
    }
}

package struct JSONSingleValueEncoding: SingleValueEncodingContainer {
    package let node: JSONEncodingNode
    package let codingPath: [any CodingKey]
    package let userInfo: [CodingUserInfoKey: Any]

    private func set(_ json: JSON) {
        node.kind = .value
        node.value = json
    }

    package mutating func encodeNil() throws { set(.null) }
    package mutating func encode(_ value: Bool) throws { set(.bool(value)) }
    package mutating func encode(_ value: String) throws { set(.string(value)) }
    package mutating func encode(_ value: Double) throws { set(.double(value)) }
    package mutating func encode(_ value: Float) throws { set(.double(Double(value))) }
    package mutating func encode(_ value: Int) throws { set(.int(Int64(value))) }
    package mutating func encode(_ value: Int8) throws { set(.int(Int64(value))) }
    package mutating func encode(_ value: Int16) throws { set(.int(Int64(value))) }
    package mutating func encode(_ value: Int32) throws { set(.int(Int64(value))) }
    package mutating func encode(_ value: Int64) throws { set(.int(value)) }
    package mutating func encode(_ value: UInt) throws { set(try JSONEncodingNode.integer(value, codingPath: codingPath)) }
    package mutating func encode(_ value: UInt8) throws { set(.int(Int64(value))) }
    package mutating func encode(_ value: UInt16) throws { set(.int(Int64(value))) }
    package mutating func encode(_ value: UInt32) throws { set(.int(Int64(value))) }
    package mutating func encode(_ value: UInt64) throws { set(try JSONEncodingNode.integer(value, codingPath: codingPath)) }
    package mutating func encode<T: Encodable>(_ value: T) throws {
        if let json = JSONEncodingNode.special(value) {
            set(json)
        } else {
            // The value writes itself into this same place of the tree.
            try value.encode(to: JSONValueEncoding(node: node, codingPath: codingPath, userInfo: userInfo))
        }
    }

    package init(node: JSONEncodingNode, codingPath: [any CodingKey], userInfo: [CodingUserInfoKey: Any] = [:]) {
        self.node = node
        self.codingPath = codingPath
        self.userInfo = userInfo
    }
}
