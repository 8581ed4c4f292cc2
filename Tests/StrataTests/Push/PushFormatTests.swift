import Foundation
import Testing

@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

@Suite("Push notification format builders")
struct PushFormatTests {
    @Test("apple: a plain alert, sound and AUTO badge; nothing else")
    func applePlainAlert() throws {
        let format = PushFormat.apple(alert: "Stock ${stock_name} is now valued ${last_price}", badge: "AUTO", sound: "default")
        #expect(format == #"{"aps":{"alert":"Stock ${stock_name} is now valued ${last_price}","badge":"AUTO","sound":"default"}}"#)
        #expect(try JSON(parsing: format) == ["aps": ["alert": "Stock ${stock_name} is now valued ${last_price}", "badge": "AUTO", "sound": "default"]])
    }

    @Test("apple: every argument lands in its member, exactly")
    func appleEveryField() throws {
        let format = PushFormat.apple(
            alert: "ignored, body wins", title: "T ${a}", subtitle: "S", body: "B $[2]", badge: "7", sound: "ping.aiff",
            category: "PRICE", threadID: "thread-1", contentAvailable: true, mutableContent: false,
            customData: ["item": "${a}", "nested": ["n": 1], "aps": "dropped"],
            titleLocKey: "TK", titleLocArguments: ["${a}", "x"], bodyLocKey: "BK", bodyLocArguments: [],
            actionLocKey: "VIEW", launchImage: "launch.png")
        let expected: JSON = [
            "aps": [
                "alert": [
                    "title": "T ${a}", "subtitle": "S", "body": "B $[2]", "title-loc-key": "TK", "title-loc-args": ["${a}", "x"],
                    "loc-key": "BK", "loc-args": [], "action-loc-key": "VIEW", "launch-image": "launch.png",
                ],
                "badge": 7, "sound": "ping.aiff", "category": "PRICE", "thread-id": "thread-1",
                "content-available": 1, "mutable-content": 0,
            ],
            "item": "${a}",
            "nested": ["n": 1],
        ]
        let parsed = try JSON(parsing: format)
        #expect(parsed == expected)
        #expect(parsed["aps"]?["badge"] == .int(7))
        // Deterministic: members sorted, the same text every time.
        #expect(format == expected.description)
        #expect(format == PushFormat.apple(
            alert: "ignored, body wins", title: "T ${a}", subtitle: "S", body: "B $[2]", badge: "7", sound: "ping.aiff",
            category: "PRICE", threadID: "thread-1", contentAvailable: true, mutableContent: false,
            customData: ["item": "${a}", "nested": ["n": 1], "aps": "dropped"],
            titleLocKey: "TK", titleLocArguments: ["${a}", "x"], bodyLocKey: "BK", bodyLocArguments: [],
            actionLocKey: "VIEW", launchImage: "launch.png"))
    }

    @Test("apple: the alert becomes the body of an alert dictionary; badges by kind")
    func appleAlertAndBadge() throws {
        #expect(try JSON(parsing: PushFormat.apple()) == ["aps": [:]])
        #expect(try JSON(parsing: PushFormat.apple(alert: "A", title: "T")) == ["aps": ["alert": ["title": "T", "body": "A"]]])
        #expect(try JSON(parsing: PushFormat.apple(body: "B")) == ["aps": ["alert": ["body": "B"]]])
        #expect(try JSON(parsing: PushFormat.apple(launchImage: "L")) == ["aps": ["alert": ["launch-image": "L"]]])
        #expect(try JSON(parsing: PushFormat.apple(badge: "0"))["aps"]?["badge"] == .int(0))
        #expect(try JSON(parsing: PushFormat.apple(badge: "${count}"))["aps"]?["badge"] == .string("${count}"))
        #expect(try JSON(parsing: PushFormat.apple(badge: "007"))["aps"]?["badge"] == .string("007"))
        #expect(try JSON(parsing: PushFormat.apple(contentAvailable: false)) == ["aps": ["content-available": 0]])
    }

    @Test("google: every argument lands in its member under android, exactly")
    func googleEveryField() throws {
        let format = PushFormat.google(
            title: "T ${a}", body: "B", icon: "ic", sound: "default", tag: "tag1", color: "#ff0000", clickAction: "OPEN",
            collapseKey: "prices", priority: "HIGH", timeToLive: "3600s", data: ["price": "$[2]", "id": "${LS_MPN_subscription_ID}"],
            titleLocKey: "TK", titleLocArguments: ["x"], bodyLocKey: "BK", bodyLocArguments: ["${a}", "y"])
        let expected: JSON = [
            "android": [
                "notification": [
                    "title": "T ${a}", "body": "B", "icon": "ic", "sound": "default", "tag": "tag1", "color": "#ff0000",
                    "click_action": "OPEN", "title_loc_key": "TK", "title_loc_args": ["x"], "body_loc_key": "BK",
                    "body_loc_args": ["${a}", "y"],
                ],
                "data": ["price": "$[2]", "id": "${LS_MPN_subscription_ID}"],
                "collapse_key": "prices", "priority": "HIGH", "ttl": "3600s",
            ]
        ]
        #expect(try JSON(parsing: format) == expected)
        #expect(format == expected.description)
        #expect(try JSON(parsing: PushFormat.google()) == ["android": [:]])
        #expect(try JSON(parsing: PushFormat.google(data: [:])) == ["android": ["data": [:]]])
        #expect(try JSON(parsing: PushFormat.google(collapseKey: "k")) == ["android": ["collapse_key": "k"]])
    }

    @Test("arguments with quotes, backslashes and control characters stay valid JSON")
    func escapedArguments() throws {
        let nasty = "a\"b\\c\nd\u{0}e\u{1F}f😀"
        #expect(try JSON(parsing: PushFormat.apple(alert: nasty))["aps"]?["alert"] == .string(nasty))
        #expect(try JSON(parsing: PushFormat.google(title: nasty, data: [nasty: nasty]))["android"]?["data"]?[nasty] == .string(nasty))
    }

    @Test("built formats compile and render with their placeholders and badge")
    func builtFormatsRender() throws {
        let apple = try NotificationTemplate(
            PushFormat.apple(title: "${name}", body: "now $[2]", badge: "AUTO", customData: ["sub": "${LS_MPN_subscription_ID}"]),
            fields: ["name", "price"])
        #expect(apple.usesBadge)
        let payload = try JSON(parsing: apple.render(values: ["ACME", "9.5"], subscriptionID: "S-1", badge: { 3 }))
        #expect(payload == ["aps": ["alert": ["title": "ACME", "body": "now 9.5"], "badge": 3], "sub": "S-1"])

        let google = try NotificationTemplate(PushFormat.google(body: "${name}", data: ["p": "${price}"]), fields: ["name", "price"])
        #expect(!google.usesBadge)
        #expect(try JSON(parsing: google.render(values: ["A", "1"], subscriptionID: "S", badge: { 0 }))
            == ["android": ["notification": ["body": "A"], "data": ["p": "1"]]])
    }
}
