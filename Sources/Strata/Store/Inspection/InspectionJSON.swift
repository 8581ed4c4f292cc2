import Foundation

/// The JSON the tools print for scripts: pretty-printed with sorted keys and unescaped slashes,
/// every count exact; a stored `Double` that JSON cannot spell (NaN, ±infinity, which a series of
/// `Double` may hold) prints as the string `"NaN"`, `"Infinity"` or `"-Infinity"`.
package enum InspectionJSON {
    /// `value` as that JSON, ending in a newline.
    package static func text<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        return String(decoding: try encoder.encode(value), as: UTF8.self) + "\n"
    }
}
