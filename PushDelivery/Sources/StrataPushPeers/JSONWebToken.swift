import Foundation

/// A compact JSON Web Token split into its parts (RFC 7519), before any verification.
struct JSONWebToken: Sendable {
    /// The header's string members (`alg`, `kid`, `typ`).
    let header: [String: String]
    /// The claims' string members (`iss`, `aud`, `scope`).
    let strings: [String: String]
    /// The claims' number members (`iat`, `exp`).
    let numbers: [String: Double]
    /// `base64url(header) + "." + base64url(claims)`: the bytes the signature covers.
    let signingInput: Data
    /// The decoded signature.
    let signature: Data

    /// Splits and decodes `text`; nil when it is not three base64url parts of which the first two are
    /// JSON objects.
    init?(_ text: Substring) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
              let headerData = Data(base64URLEncoded: parts[0]),
              let claimsData = Data(base64URLEncoded: parts[1]),
              let signature = Data(base64URLEncoded: parts[2]),
              let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any],
              let claims = try? JSONSerialization.jsonObject(with: claimsData) as? [String: Any]
        else { return nil }
        self.header = header.compactMapValues { $0 as? String }
        self.strings = claims.compactMapValues { $0 as? String }
        self.numbers = claims.compactMapValues { ($0 as? String) == nil ? ($0 as? NSNumber)?.doubleValue : nil }
        self.signingInput = Data(text[..<parts[1].endIndex].utf8)
        self.signature = signature
    }

    /// An integral NumericDate member of the claims (seconds since 1970).
    func seconds(_ name: String) -> Int? {
        guard let value = numbers[name], value == value.rounded(), abs(value) < 1e15 else { return nil }
        return Int(value)
    }
}

extension Data {
    /// Decodes unpadded (or padded) base64url text.
    init?(base64URLEncoded text: Substring) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64.append("=") }
        self.init(base64Encoded: base64)
    }

    /// The unpadded base64url text of these bytes.
    var base64URLEncodedString: String {
        base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
