import Foundation
import Testing

@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

@Suite("Push field texts")
struct PushFieldsTests {
    @Test("field text of each kind of value")
    func fieldText() throws {
        #expect(PushFields.fieldText(nil) == "")
        #expect(PushFields.fieldText(.null) == "")
        #expect(PushFields.fieldText("as \"it\" is\n") == "as \"it\" is\n")
        #expect(PushFields.fieldText("") == "")
        #expect(PushFields.fieldText(true) == "true")
        #expect(PushFields.fieldText(false) == "false")
        #expect(PushFields.fieldText(-42) == "-42")
        #expect(PushFields.fieldText(.int(Int64.min)) == "-9223372036854775808")
        #expect(PushFields.fieldText(512.5) == "512.5")
        #expect(PushFields.fieldText(.double(1e300)) == "1e+300")
        #expect(PushFields.fieldText(.double(.nan)) == "")
        #expect(PushFields.fieldText(.double(-.infinity)) == "")
        #expect(PushFields.fieldText(.date(Date(timeIntervalSince1970: 0.5))) == "1970-01-01T00:00:00.500Z")
        #expect(PushFields.fieldText([1, "a", nil]) == #"[1,"a",null]"#)
        #expect(PushFields.fieldText(["b": 1, "a": ["x": false]]) == #"{"a":{"x":false},"b":1}"#)
        // Numbers read back as the numbers they were (what a trigger's Double.parseDouble sees).
        for value in [0.1, -2.5e-8, 123456789.125, 9007199254740994, .leastNonzeroMagnitude] { #expect(Double(PushFields.fieldText(.double(value))) == value) }
    }

    @Test("an object's top-level members are the fields; any other value is the single field")
    func fields() throws {
        let value: JSON = ["stock_name": "ACME", "last_price": 9.5, "volume": 1200, "halted": nil, "tags": ["a"]]
        let fields = PushFields.fields(of: value, singleFieldName: "value")
        #expect(fields == ["stock_name": "ACME", "last_price": "9.5", "volume": "1200", "halted": "", "tags": #"["a"]"#])
        #expect(PushFields.fields(of: 3, singleFieldName: "value") == ["value": "3"])
        #expect(PushFields.fields(of: "hello", singleFieldName: "message") == ["message": "hello"])
        #expect(PushFields.fields(of: nil, singleFieldName: "value") == ["value": ""])
        #expect(PushFields.fields(of: [1, 2], singleFieldName: "value") == ["value": "[1,2]"])
        #expect(PushFields.fields(of: [:], singleFieldName: "value") == [:])
        #expect(PushFields.values(fields, names: ["last_price", "bid", "stock_name"]) == ["9.5", "", "ACME"])
    }
}
