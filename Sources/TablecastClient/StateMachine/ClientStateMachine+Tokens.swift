import Foundation
import TableModel
import TablecastProtocol

/// Tokens from ``TablecastClient/Configuration/tokenProvider``: asked for at every hello, and again before a signed
/// token expires, then sent as `refreshToken`.
extension ClientStateMachine {
    @Sendable static func systemWallClock() -> Double { Date().timeIntervalSince1970 }

    /// The token provider answered for `use`: a hello waiting for it is sent; a fresh token replaces the
    /// connection's with `refreshToken`. A provider that failed is reported; a hello then closes its socket, to be
    /// tried again with backoff.
    mutating func tokenGiven(_ result: Result<String, any Error>, for use: TokenUse, now: Instant) -> [Action] {
        switch (use, result) {
        case (.hello(let socket), .success(let token)):
            guard case .open(socket, welcomed: false) = link else { return [] }
            self.token = token
            return greet(socket)
        case (.hello(let socket), .failure(let error)):
            guard case .open(socket, welcomed: false) = link else { return [] }
            return [
                .emit(.refusal(Self.providerFailed(error))),
                .socket(.close(socket, code: .normalClosure)),
            ]
        case (.refresh(let socket), .success(let token)):
            // Nothing newer: the server closes the connection when the token ends, and the reconnect asks again.
            guard openSocket == socket, token != self.token else { return [] }
            let ref = makeRef()
            tokenRefresh = (ref, token)
            return [.socket(.send(ClientMessage(ref: ref, .refreshToken(token: token)), on: socket))]
        case (.refresh(let socket), .failure(let error)):
            guard openSocket == socket else { return [] }
            return [.emit(.refusal(Self.providerFailed(error)))]
        }
    }

    /// The answer to the `refreshToken` in flight, if `ref` is its: once `accepted`, its token is the connection's
    /// and the next refresh is scheduled; refused, the current token stays. Nil for another ref.
    mutating func tokenRefreshAnswered(_ ref: String?, accepted: Bool, now: Instant) -> [Action]? {
        guard let refresh = tokenRefresh, ref == refresh.ref else { return nil }
        tokenRefresh = nil
        guard accepted, let socket = openSocket else { return [] }
        token = refresh.token
        return scheduleTokenRefresh(on: socket, now: now)
    }

    /// The timer that asks the provider for the next token, due a quarter of the token's remaining life before its
    /// `exp` (at most a minute before); none without a provider or for a token that is not a JWT with `exp`.
    func scheduleTokenRefresh(on socket: SocketID, now: Instant) -> [Action] {
        guard configuration.tokenProvider != nil, let token, let expires = Self.expiry(of: token) else { return [] }
        let remaining = max(0, expires - wallClock())
        let delay = remaining - min(60, remaining / 4)
        return [.schedule(.refreshToken(socket), at: now + .milliseconds(Int64(delay * 1000)))]
    }

    /// The `exp` claim of a signed token, read without verifying it (the server does): nil for other tokens.
    static func expiry(of token: String) -> Double? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let payload = Data(base64Encoded: base64),
            case .object(let claims)? = try? JSONValue(parsing: [UInt8](payload)),
            case .number(let expires)? = claims["exp"]
        else { return nil }
        return expires
    }

    private static func providerFailed(_ error: any Error) -> ProtocolError {
        ProtocolError(.unauthorized, "the token provider failed: \(error)")
    }
}
