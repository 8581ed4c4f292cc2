import Foundation

/// A table of text with aligned columns, for the tools' human-readable output.
package struct TextTable {
    /// How a column's cells line up.
    package enum Alignment { case left, right }

    /// The column headers, without their `>` marks.
    package let headers: [String]
    /// Each column's alignment.
    package let alignments: [Alignment]
    /// The rows added so far.
    package private(set) var rows: [[String]] = []

    /// `headers` name the columns; a header ending in `>` is right-aligned (the `>` is dropped).
    package init(_ headers: [String]) {
        self.headers = headers.map { $0.hasSuffix(">") ? String($0.dropLast()) : $0 }
        self.alignments = headers.map { $0.hasSuffix(">") ? .right : .left }
    }

    /// Adds a row; missing cells are empty.
    package mutating func add(_ row: [String]) {
        rows.append(row + Array(repeating: "", count: max(0, headers.count - row.count)))
    }

    /// Whether no row was added.
    package var isEmpty: Bool { rows.isEmpty }

    /// The table as lines of text: the headers, then the rows, each line after `indent`.
    package func render(indent: String = "  ") -> String {
        var widths = headers.map(\.count)
        for row in rows {
            for (i, cell) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            var out = indent
            for (i, cell) in cells.enumerated() where i < widths.count {
                let pad = String(repeating: " ", count: widths[i] - cell.count)
                let last = i == widths.count - 1
                switch alignments[i] {
                case .left: out += last ? cell : cell + pad
                case .right: out += pad + cell
                }
                if !last { out += "  " }
            }
            while out.hasSuffix(" ") { out.removeLast() }
            return out + "\n"
        }
        return line(headers) + rows.map(line).joined()
    }
}

/// Number formatting for tables (JSON always carries exact values).
package enum Format {
    /// `1536` → `1.5 KiB`; below 1 KiB, exact bytes.
    package static func bytes(_ n: UInt64) -> String {
        if n < 1024 { return "\(n) B" }
        let units = ["KiB", "MiB", "GiB", "TiB", "PiB"]
        var value = Double(n) / 1024
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return String(format: "%.1f", value) + " " + units[unit]
    }

    /// `bytes` of an `Int`; a negative one shows as `0 B`.
    package static func bytes(_ n: Int) -> String { bytes(UInt64(max(0, n))) }

    /// `1234567` → `1,234,567`.
    package static func count<T: BinaryInteger>(_ n: T) -> String {
        let digits = String(n.magnitude)
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return (n < 0 ? "-" : "") + out
    }

    /// A compression ratio with two decimals, `-` when there is none.
    package static func ratio(_ r: Double?) -> String {
        r.map { String(format: "%.2f", $0) } ?? "-"
    }

    /// Cuts a long key for a table cell; the JSON output has it whole.
    package static func clip(_ s: String, _ width: Int = 48) -> String {
        s.count <= width ? s : String(s.prefix(width - 1)) + "…"
    }

    /// `count`, or `-` for nil.
    package static func optional<T: BinaryInteger>(_ n: T?) -> String { n.map { count($0) } ?? "-" }
}
