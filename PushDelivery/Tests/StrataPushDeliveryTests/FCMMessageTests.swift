import Foundation
import Testing
@testable import StrataPushDelivery

@Suite struct FCMMessageTests {
    static func object(_ data: Data?) -> [String: Any]? {
        data.flatMap { (try? JSONSerialization.jsonObject(with: $0)) as? [String: Any] }
    }

    @Test("every top-level member of the payload goes into message, beside the token")
    func splice() throws {
        let payload = #"{"android":{"notification":{"title":"Hi"}},"data":{"k":"v"}}"#
        let body = try #require(FCMMessage.body(deviceToken: "tok:1", payload: payload))
        #expect(String(decoding: body, as: UTF8.self) == #"{"message":{"token":"tok:1","android":{"notification":{"title":"Hi"}},"data":{"k":"v"}}}"#)
        let message = try #require(Self.object(body)?["message"] as? [String: Any])
        #expect(Set(message.keys) == ["token", "android", "data"])
    }

    @Test("an empty object gives the token alone; white space around is fine; a token is escaped")
    func edges() throws {
        #expect(FCMMessage.body(deviceToken: "t", payload: " { } ").map { String(decoding: $0, as: UTF8.self) } == #"{"message":{"token":"t"}}"#)
        let body = try #require(FCMMessage.body(deviceToken: "a\"b\\c", payload: "{}"))
        #expect((Self.object(body)?["message"] as? [String: Any])?["token"] as? String == "a\"b\\c")
    }

    @Test("a payload's own token member gives way to the device's token")
    func ownToken() throws {
        let body = try #require(FCMMessage.body(deviceToken: "device", payload: #"{"token":"other","data":{"x":"1"}}"#))
        let message = try #require(Self.object(body)?["message"] as? [String: Any])
        #expect(message["token"] as? String == "device" && (message["data"] as? [String: Any])?["x"] as? String == "1")
    }

    @Test("a payload that is not a JSON object is no message")
    func notAnObject() {
        #expect(FCMMessage.body(deviceToken: "t", payload: "[1]") == nil)
        #expect(FCMMessage.body(deviceToken: "t", payload: "\"x\"") == nil)
        #expect(FCMMessage.body(deviceToken: "t", payload: "") == nil)
    }
}
