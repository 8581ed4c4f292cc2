import Foundation

/// A JSON value: what documents hold, what indexes emit, and a value type of time series and
/// channels.
///
/// ```swift
/// let invoice: JSON = ["InvoiceNumber": "A-1", "TotalCost": 1200, "Paid": false,
///                      "Lines": [["sku": "X1", "qty": 2]]]
/// invoice["TotalCost"]           // .int(1200)
/// invoice["Lines"]?[0]?["sku"]   // .string("X1")
/// ```
///
/// Numbers are `int` (64-bit) or `double`; an `int` and a `double` of the same value are equal
/// (and hash alike), as they collate equal. `date` is a JSON string in ISO 8601 form in JSON
/// text and in `Codable` containers.
///
/// `JSON` is expressible by `nil` (as `.null`), so where a `JSON?` is expected a `nil` inside
/// a larger expression may become `.some(.null)`: `let v: JSON? = flag ? nil : x` holds `.null`,
/// not `nil`. Write `flag ? JSON?.none : x` (or an `if`) when you mean "no value".
public enum JSON: Sendable {
    /// JSON `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number without a fraction, as a 64-bit integer.
    case int(Int64)
    /// A number as a double.
    case double(Double)
    /// A string.
    case string(String)
    /// A date: an ISO 8601 string in JSON text.
    case date(Date)
    /// An array.
    case array([JSON])
    /// An object: members by name.
    case object([String: JSON])

    /// The member named `key` of an object; nil for a missing member or a non-object.
    public subscript(key: String) -> JSON? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The element at `index` of an array; nil when out of range or for a non-array.
    public subscript(index: Int) -> JSON? {
        if case .array(let elements) = self, elements.indices.contains(index) { return elements[index] }
        return nil
    }

    /// The number as a `Double`, for `int` and `double`; nil otherwise.
    public var doubleValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    /// The value of an `int`, or of a `double` holding an integer exactly; nil otherwise.
    public var int64Value: Int64? {
        switch self {
        case .int(let i): return i
        case .double(let d): return Int64(exactly: d)
        default: return nil
        }
    }

    /// The value of a `string`; nil otherwise.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The value of a `bool`; nil otherwise.
    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// Whether this is `null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }
}

extension JSON: Equatable, Hashable {
    public static func == (lhs: JSON, rhs: JSON) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.int(a), .int(b)): return a == b
        case let (.double(a), .double(b)): return a == b
        case let (.int(a), .double(b)), let (.double(b), .int(a)): return Int64(exactly: b) == a
        case let (.string(a), .string(b)): return a.unicodeScalars.elementsEqual(b.unicodeScalars)
        case let (.date(a), .date(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.object(a), .object(b)): return a == b
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let b): hasher.combine(1); hasher.combine(b)
        // An int and a double of the same value are equal, so both hash by the integer when the
        // double holds one exactly.
        case .int(let i): hasher.combine(2); hasher.combine(i)
        case .double(let d):
            if let i = Int64(exactly: d) { hasher.combine(2); hasher.combine(i) } else { hasher.combine(3); hasher.combine(d) }
        case .string(let s): hasher.combine(4); for u in s.unicodeScalars { hasher.combine(u.value) }
        case .date(let d): hasher.combine(5); hasher.combine(d)
        case .array(let a): hasher.combine(6); hasher.combine(a)
        case .object(let o): hasher.combine(7); hasher.combine(o)
        }
    }
}

extension JSON: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSON)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension JSON: Codable {
    /// Decodes any JSON value; a string stays a `string` (dates are not guessed from strings).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let b = try? container.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? container.decode(Int64.self) {
            self = .int(i)
        } else if let d = try? container.decode(Double.self) {
            self = .double(d)
        } else if let s = try? container.decode(String.self) {
            self = .string(s)
        } else if let a = try? container.decode([JSON].self) {
            self = .array(a)
        } else if let o = try? container.decode([String: JSON].self) {
            self = .object(o)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a JSON value")
        }
    }

    /// Encodes the value; a `date` as an ISO 8601 string with fractional seconds.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let b): try container.encode(b)
        case .int(let i): try container.encode(i)
        case .double(let d): try container.encode(d)
        case .string(let s): try container.encode(s)
        case .date(let d): try container.encode(JSON.iso8601String(d))
        case .array(let a): try container.encode(a)
        case .object(let o): try container.encode(o)
        }
    }

    /// `date` in ISO 8601 form, UTC, with milliseconds: `2026-11-22T08:30:00.000Z`.
    public static func iso8601String(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
