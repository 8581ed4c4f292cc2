@_spi(Layers) import StrataFormat

/// The names of the files in a store directory (FORMAT.md, "Store directory").
package enum FileNames {
    package static let lock = "LOCK"
    package static let manifest = "MANIFEST"
    /// Present in a backup's directory from before its first store file is written until after its
    /// manifest is durable: open refuses a directory holding it (FORMAT.md 9.6).
    package static let backupMarker = "BACKUP-INCOMPLETE"

    package static func log(_ number: UInt64) -> String { pad(number) + ".log" }
    package static func segment(_ number: UInt64) -> String { pad(number) + ".seg" }

    package enum Kind: Equatable { case log(UInt64), segment(UInt64), manifest, lock, temporary, other }

    package static func parse(_ name: String) -> Kind {
        if name == lock { return .lock }
        if name == manifest { return .manifest }
        if name.hasSuffix(".tmp") { return .temporary }
        // Only the canonical spelling (at least six digits, no extra leading zeros) names a file
        // of the store: recovery reopens files by the name `log(_:)`/`segment(_:)` gives.
        for (suffix, make) in [(".log", Kind.log), (".seg", Kind.segment)] where name.hasSuffix(suffix) {
            let digits = name.dropLast(suffix.count)
            if !digits.isEmpty, digits.allSatisfy({ $0 >= "0" && $0 <= "9" }), let n = UInt64(digits),
               pad(n) == digits {
                return make(n)
            }
        }
        return .other
    }

    private static func pad(_ n: UInt64) -> String {
        let s = String(n)
        return s.count >= 6 ? s : String(repeating: "0", count: 6 - s.count) + s
    }
}
