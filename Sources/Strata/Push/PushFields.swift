import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The fields of an update as Lightstreamer sees them: names and texts.
///
/// A field's text is a string, as in Lightstreamer: a string as it is; a number, a boolean, an
/// array or an object as its compact JSON text (object members sorted by name); a date as its
/// ISO 8601 text; `null`, a number JSON text cannot hold (NaN, ±infinity) and an absent field as
/// the empty string.
///
/// ```swift
/// let value: JSON = ["stock_name": "ACME", "last_price": 9.5, "volume": 1200, "halted": nil]
/// let fields = PushFields.fields(of: value, singleFieldName: "value")
/// // ["stock_name": "ACME", "last_price": "9.5", "volume": "1200", "halted": ""]
/// PushFields.values(fields, names: ["last_price", "bid"])   // ["9.5", ""]
/// ```
enum PushFields {
    /// The field text of a value; `nil` (an absent field) is the empty string.
    static func fieldText(_ value: JSON?) -> String {
        switch value {
        case nil, .null?: return ""
        case .string(let s)?: return s
        case .bool(let b)?: return b ? "true" : "false"
        case .int(let i)?: return String(i)
        case .double(let d)?: return d.isFinite ? JSON.double(d).description : ""
        case .date(let d)?: return JSON.iso8601String(d)
        case let value?: return value.description
        }
    }

    /// The fields an update's value carries: the top-level members of an object, else the one
    /// field `singleFieldName` (`value` for time-series events, `message` for history messages).
    ///
    /// Only the fields present are returned, so that a MERGE subscription keeps the earlier text
    /// of the others; a member holding `null` is present, with the empty text.
    static func fields(of value: JSON, singleFieldName: String) -> [String: String] {
        if case .object(let members) = value { return members.mapValues { fieldText($0) } }
        return [singleFieldName: fieldText(value)]
    }

    /// The texts of the fields `names`, in that order; an absent field is the empty string.
    static func values(_ fields: [String: String], names: [String]) -> [String] {
        names.map { fields[$0] ?? "" }
    }
}
