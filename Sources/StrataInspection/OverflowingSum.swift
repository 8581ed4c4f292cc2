@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Totals a tool adds up from numbers read in files (segment properties, manifest entries): a
/// damaged or hostile file can claim counts whose sum does not fit 64 bits. The total then stops
/// at 2⁶⁴ − 1 and the overflow is remembered, for the tool to report as a finding instead of
/// trapping.
struct OverflowingSum {
    private(set) var overflowed = false

    mutating func add(_ total: inout UInt64, _ x: UInt64) {
        let (sum, overflow) = total.addingReportingOverflow(x)
        total = overflow ? .max : sum
        if overflow { overflowed = true }
    }
}
