#if canImport(_FoundationICU)
import _FoundationICU
#endif

// Unicode Collation Algorithm sort keys for index keys (FORMAT.md §13.4): the same structure as
// the collation key of §13.3, with every string's UTF-8 replaced by its ICU sort key under the
// root locale (CLDR's default ordering of the UCA), default attributes (tertiary strength) —
// CouchDB's default view collation.
//
// The sort keys come from the ICU that the Swift toolchain ships for Foundation on Linux
// (`_FoundationICU`; Foundation loads it anyway, so nothing new is linked into the process and
// embedders install nothing). Its functions carry a `swift_` prefix (its urename.h). Sort keys
// change when ICU's collation data changes, so an index records ``UnicodeCollation/version``
// and is rebuilt when it differs.

/// The root-locale ICU collator and its sort keys.
package enum UnicodeCollation {
#if canImport(_FoundationICU)
    /// A collator opened once; ICU's const collator functions (`ucol_getSortKey`,
    /// `ucol_getVersion`) are safe to call from several threads at once.
    private final class Collator: @unchecked Sendable {
        let handle: OpaquePointer?

        init() {
            var status = U_ZERO_ERROR
            let h = swift_ucol_open("", &status)
            handle = status.rawValue <= U_ZERO_ERROR.rawValue ? h : nil
        }

        deinit { if let handle { swift_ucol_close(handle) } }
    }

    private static let collator = Collator()

    /// Whether this build can compute Unicode sort keys.
    package static var isAvailable: Bool { collator.handle != nil }

    /// The collator's version (ICU's `ucol_getVersion`: it changes whenever sort keys may
    /// change), or nil when unavailable.
    package static var version: [UInt8]? {
        guard let handle = collator.handle else { return nil }
        var info: UVersionInfo = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &info) { swift_ucol_getVersion(handle, $0.baseAddress?.assumingMemoryBound(to: UInt8.self)) }
        return [info.0, info.1, info.2, info.3]
    }

    /// Appends the sort key of `s` without ICU's terminating zero byte (a sort key holds no
    /// other zero byte).
    package static func appendSortKey(_ s: String, to out: inout [UInt8]) throws {
        guard let handle = collator.handle else { throw unavailable }
        let units = Array(s.utf16)
        guard units.count < Int(Int32.max) / 4 else {
            throw StrataError.invalidArgument(argument: "key", reason: "a string of \(units.count) UTF-16 units is too long for a Unicode sort key")
        }
        var capacity = max(32, units.count * 4 + 16)
        while true {
            var key = [UInt8](repeating: 0, count: capacity)
            let length = units.withUnsafeBufferPointer { u in
                key.withUnsafeMutableBufferPointer { k in
                    Int(swift_ucol_getSortKey(handle, u.baseAddress, Int32(u.count), k.baseAddress, Int32(k.count)))
                }
            }
            guard length > 0 else { throw StrataError.invalidArgument(argument: "key", reason: "ICU returned no sort key for a string of \(units.count) UTF-16 units") }
            if length <= capacity {
                // `length` counts the terminating zero.
                out.append(contentsOf: key[0..<(length - 1)])
                return
            }
            capacity = length
        }
    }
#else
    package static var isAvailable: Bool { false }
    package static var version: [UInt8]? { nil }
    package static func appendSortKey(_ s: String, to out: inout [UInt8]) throws { throw unavailable }
#endif

    package static var unavailable: StrataError {
        .invalidArgument(argument: "collation", reason: "Unicode collation (DocumentIndex collation .unicode) needs ICU, which this build of Strata lacks")
    }
}

extension JSON {
    /// Appends the Unicode collation key of the value (FORMAT.md §13.4): bytes whose `memcmp`
    /// order is the order of the Unicode Collation Algorithm for strings (CouchDB's default view
    /// collation), and otherwise the collation order of ``appendCollationKey(to:)``.
    ///
    /// The type bytes, numbers, arrays and objects are encoded as in ``appendCollationKey(to:)``;
    /// a string (or date, as its ISO 8601 string, or object member name) is `0x40`, its ICU
    /// sort key, `0x00`. Strings that the UCA ranks equal (a precomposed and a decomposed `é`)
    /// get identical keys. The key is self-delimiting; ``JSONCollationReader/skipValue(depth:)``
    /// finds its end. It cannot be decoded back: index rows keep the value's
    /// ``appendCollationKey(to:)`` beside it.
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` when ICU is unavailable.
    package func appendUnicodeCollationKey(to out: inout [UInt8]) throws {
        switch self {
        case .null, .bool, .int, .double: appendCollationKey(to: &out)
        case .string(let s): try JSONCollation.appendUnicodeString(s, to: &out)
        case .date(let d): try JSONCollation.appendUnicodeString(JSON.iso8601String(d), to: &out)
        case .array(let elements):
            out.append(JSONCollationType.array)
            for element in elements { try element.appendUnicodeCollationKey(to: &out) }
            out.append(JSONCollationType.end)
        case .object(let members):
            out.append(JSONCollationType.object)
            for (key, value) in members.sorted(by: { JSONTextWriter.codePointLess($0.key, $1.key) }) {
                try JSONCollation.appendUnicodeString(key, to: &out)
                try value.appendUnicodeCollationKey(to: &out)
            }
            out.append(JSONCollationType.end)
        }
    }

    /// The Unicode collation key of the value; see ``appendUnicodeCollationKey(to:)``.
    package func unicodeCollationKey() throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(24)
        try appendUnicodeCollationKey(to: &out)
        return out
    }
}

extension JSONCollation {
    /// Appends a string's Unicode form: `0x40`, the sort key, `0x00`.
    package static func appendUnicodeString(_ s: String, to out: inout [UInt8]) throws {
        out.append(JSONCollationType.string)
        try UnicodeCollation.appendSortKey(s, to: &out)
        out.append(0x00)
    }
}
