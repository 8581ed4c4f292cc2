import Testing
@testable import StrataPushDelivery

@Suite struct APNsPushTypeTests {
    @Test("background only with content-available and nothing that alerts; priority 5 for it, 10 otherwise",
          arguments: [
              (#"{"aps":{"content-available":1}}"#, APNsPushType.background),
              (#"{ "x": [1, {"aps": 2}], "aps" : { "content-available" : 1 , "thread-id":"t" }, "y":"}" }"#, .background),
              (#"{"aps":{"content-available":1,"alert":"hi"}}"#, .alert),
              (#"{"aps":{"content-available":1,"badge":3}}"#, .alert),
              (#"{"aps":{"content-available":1,"sound":"default"}}"#, .alert),
              (#"{"aps":{"alert":{"title":"a","body":"b"}}}"#, .alert),
              (#"{"aps":{}}"#, .alert),
              (#"{"data":{"content-available":1}}"#, .alert),
              (#"{"aps":{"content\u002davailable":1}}"#, .background),
              (#"{"aps":"content-available"}"#, .alert),
              ("not json", .alert),
              (#"{"aps":{"content-available":1"#, .alert),
              ("", .alert),
          ])
    func pushType(payload: String, expected: APNsPushType) {
        let type = APNsPushType(payload: payload)
        #expect(type == expected)
        #expect(type.priority == (expected == .background ? "5" : "10"))
    }
}
