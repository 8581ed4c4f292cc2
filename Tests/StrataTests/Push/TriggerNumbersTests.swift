import Testing

@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

@Suite("Java number conversions of the trigger language")
struct TriggerNumbersTests {
    @Test("parseDouble and parseFloat round exactly: random decimals against the standard library")
    func exactRounding() {
        var random = SplitMix64(seed: 5)
        for _ in 0..<50_000 {
            let digits = 1 + random.below(random.chance(200) ? 30 : 17)
            var text = random.chance(300) ? "-" : ""
            for k in 0..<digits {
                if k == digits / 2, random.chance(700) { text += "." }
                text += String(random.below(10))
            }
            if random.chance(600) { text += "e" + String(random.below(80) - 40) }
            if random.chance(50) { text += "e" + String(random.below(800) - 400) }
            #expect(TriggerNumbers.parseDouble(text) == Double(text), "\(text)")
            #expect(TriggerNumbers.parseFloat(text) == Float(text), "\(text)")
        }
        // Every double written by Swift reads back as itself.
        for _ in 0..<20_000 {
            let d = Double(bitPattern: random.next())
            guard d.isFinite else { continue }
            #expect(TriggerNumbers.parseDouble(d.description) == d, "\(d)")
            #expect(TriggerNumbers.parseDouble(TriggerNumbers.javaString(d)) == d, "\(d)")
            let f = Float(bitPattern: UInt32(truncatingIfNeeded: random.next()))
            guard f.isFinite else { continue }
            #expect(TriggerNumbers.parseFloat(TriggerNumbers.javaString(f)) == f, "\(f)")
        }
    }

    @Test("Java's grammar at the edges")
    func grammar() {
        #expect(TriggerNumbers.parseDouble("\u{0}\u{1F} 1.5 \u{20}") == 1.5)
        #expect(TriggerNumbers.parseDouble("\u{A0}1.5") == nil)
        #expect(TriggerNumbers.parseDouble("-0")?.sign == .minus)
        #expect(TriggerNumbers.parseDouble("-NaN")?.isNaN == true)
        #expect(TriggerNumbers.parseDouble("+Infinity") == .infinity)
        #expect(TriggerNumbers.parseDouble("Infinityd") == nil)
        #expect(TriggerNumbers.parseDouble("0x1.8p1") == 3)
        #expect(TriggerNumbers.parseDouble("0x.8p1") == 1)
        #expect(TriggerNumbers.parseDouble("0x8.p-3") == 1)
        #expect(TriggerNumbers.parseDouble("0xp1") == nil)
        #expect(TriggerNumbers.parseDouble("0x1.8") == nil)
        #expect(TriggerNumbers.parseDouble("0x1p") == nil)
        #expect(TriggerNumbers.parseDouble("1e+") == nil)
        #expect(TriggerNumbers.parseDouble("1e5d") == 100_000)
        #expect(TriggerNumbers.parseDouble("1e99999999999999") == .infinity)
        #expect(TriggerNumbers.parseDouble("1e-99999999999999") == 0)
        #expect(TriggerNumbers.parseDouble("0e99999999999999") == 0)
        #expect(TriggerNumbers.parseDouble(String(repeating: "0", count: 5000) + "1.5") == 1.5)
        #expect(TriggerNumbers.parseDouble("0." + String(repeating: "0", count: 5000) + "15e5001") == 1.5)
        #expect(TriggerNumbers.parseDouble("1" + String(repeating: "0", count: 400) + "e-400") == 1)
        #expect(TriggerNumbers.parseInteger("-2147483648", bits: 32) == -2_147_483_648)
        #expect(TriggerNumbers.parseInteger("2147483648", bits: 32) == nil)
        #expect(TriggerNumbers.parseInteger("-9223372036854775808", bits: 64) == .min)
        #expect(TriggerNumbers.parseInteger("-9223372036854775809", bits: 64) == nil)
        #expect(TriggerNumbers.parseInteger("18446744073709551616", bits: 64) == nil)
        #expect(TriggerNumbers.parseInteger("-٤٢", bits: 32) == -42)
        #expect(TriggerNumbers.parseInteger("-", bits: 32) == nil)
        #expect(TriggerNumbers.parseInteger("", bits: 32) == nil)
        #expect(TriggerNumbers.parseInteger("+-1", bits: 32) == nil)
        #expect(TriggerNumbers.javaString(1e21) == "1.0E21")
        #expect(TriggerNumbers.javaString(-1234.5) == "-1234.5")
        #expect(TriggerNumbers.javaString(Float(0.1)) == "0.1")
        #expect(TriggerNumbers.javaString(Double(Float(0.1))) == "0.10000000149011612")
        #expect(TriggerNumbers.javaString(2 * Double.leastNonzeroMagnitude) == "9.9E-324")
        #expect(TriggerNumbers.javaString(Float.leastNonzeroMagnitude) == "1.4E-45")
        #expect(TriggerNumbers.javaString(Double.greatestFiniteMagnitude) == "1.7976931348623157E308")
    }
}
