import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A value of a channel or series on the wire (Gateway/PROTOCOL.md "Values") and in its stored
/// form (FORMAT.md §13): the inverse of `ValueCodec.json(typeName:bytes:)`.
enum StoredValueJSON {
    /// Appends the stored form of `json` for a collection of type `typeName`; a value of another
    /// type is a ``StrataError/typeMismatch(_:)`` naming `what`.
    static func append(_ json: JSON, typeName: String, what: @autoclosure () -> String, to out: inout [UInt8]) throws {
        func mismatch() -> StrataError {
            .typeMismatch("\(what()): the gateway's value \(json.jsonText(limit: 60)) is not a \(typeName)")
        }
        switch typeName {
        case "Int64":
            guard case .int(let v) = json else { throw mismatch() }
            try ValueCodec<Int64>().encode(v, into: &out)
        case "Double":
            switch json {
            case .double(let d): try ValueCodec<Double>().encode(d, into: &out)
            case .int(let i): try ValueCodec<Double>().encode(Double(i), into: &out)
            default: throw mismatch()
            }
        case "String":
            guard case .string(let s) = json else { throw mismatch() }
            try ValueCodec<String>().encode(s, into: &out)
        case "Bool":
            guard case .bool(let b) = json else { throw mismatch() }
            try ValueCodec<Bool>().encode(b, into: &out)
        case "Data":
            guard case .string(let s) = json, let data = Data(base64Encoded: s) else { throw mismatch() }
            out.append(contentsOf: data)
        default:
            // JSON and Codable types are stored as binary JSON.
            json.appendBinary(to: &out)
        }
    }

    /// The JSON text the wire carries for `json`: keys sorted, so that the same value is always
    /// the same text (the gateway compares the texts of a retried upload).
    static func text(_ json: JSON) -> String {
        String(decoding: json.jsonData(sortedKeys: true), as: UTF8.self)
    }
}

extension JSON {
    /// At most `limit` characters of the value's JSON text, for error messages.
    func jsonText(limit: Int) -> String {
        let text = String(decoding: jsonData(sortedKeys: true), as: UTF8.self)
        return text.count <= limit ? text : String(text.prefix(limit)) + "…"
    }
}
