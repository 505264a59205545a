import TableModel
import TablecastProtocol
import XCTest

@testable import TablecastServer

final class HTTPAPITests: XCTestCase {
    func testEveryErrorCodeHasOneStatus() {
        let expected: [ProtocolError.Code: Int] = [
            .badRequest: 400, .unknownType: 400, .unauthorized: 401, .forbidden: 403, .noSuchTable: 404,
            .tableExists: 409, .conflict: 409, .stale: 409, .refReused: 409, .pruned: 410, .limitExceeded: 413,
            .outOfRange: 422, .invalidBatch: 422, .notEditable: 422, .notMovable: 422, .rateLimited: 429,
            .unavailable: 503, .internal: 500,
        ]
        XCTAssertEqual(Set(expected.keys), Set(ProtocolError.Code.allCases))
        for (code, status) in expected { XCTAssertEqual(APIStatus.status(of: code), status, "\(code)") }
    }

    func testRefusalsReadAsCodeAndMessageWithRetryAfterWhenTheyShouldWait() throws {
        let limited = APIStatus.reply(ProtocolError(.rateLimited, "slow down"))
        XCTAssertEqual(limited.status, 429)
        XCTAssertEqual(limited.headers, [.init("retry-after", "1")])
        XCTAssertEqual(
            try JSONValue(parsing: limited.body), ["code": "rate_limited", "message": "slow down"])
        let unavailable = APIStatus.reply(ProtocolError(.unavailable, "store down"))
        XCTAssertEqual(unavailable.status, 503)
        XCTAssertEqual(unavailable.headers, [.init("retry-after", "5")])
        let invalid = APIStatus.reply(ProtocolError(.outOfRange, "no row", at: "moveRows[0]"), status: 418)
        XCTAssertEqual(invalid.status, 418)
        XCTAssertEqual(invalid.headers, [])
        XCTAssertEqual(
            try JSONValue(parsing: invalid.body), ["code": "out_of_range", "message": "no row", "at": "moveRows[0]"])
    }

    private func route(_ method: String, _ path: String, _ query: String? = nil) -> Result<APIRoute, APIRefusal> {
        APIRoute.parse(method: method, path: path, query: query)
    }

    func testPathsAndMethodsRoute() {
        XCTAssertEqual(route("GET", "/v1/tables"), .success(.listTables))
        XCTAssertEqual(route("HEAD", "/v1/tables"), .success(.listTables))
        XCTAssertEqual(route("POST", "/v1/tables"), .success(.createTable))
        XCTAssertEqual(route("GET", "/v1/tables/t"), .success(.snapshot("t")))
        XCTAssertEqual(route("DELETE", "/v1/tables/t"), .success(.dropTable("t")))
        XCTAssertEqual(route("PATCH", "/v1/tables/t/rules"), .success(.setRules("t")))
        XCTAssertEqual(route("POST", "/v1/tables/t/intents"), .success(.intent("t")))
        XCTAssertEqual(route("GET", "/v1/tables/t/events"), .success(.events("t")))
        XCTAssertEqual(route("GET", "/v1/openapi.yaml"), .success(.openAPI))
        XCTAssertEqual(route("GET", "/v1/tables/a%20b"), .success(.snapshot("a b")))
        XCTAssertEqual(route("GET", "/v1/tables/%e2%9C%93"), .success(.snapshot("✓")))
        XCTAssertEqual(
            route("GET", "/v1/tables/t/history", "from=2&limit=10&order=oldest"),
            .success(.history("t", query: ["from": "2", "limit": "10", "order": "oldest"])))
        XCTAssertEqual(route("GET", "/v1/tables/t/snapshot", "version=7"), .success(.snapshotAt("t", version: 7)))
    }

    /// Only `%` and two hex digits is an escape: a sign is not a digit, though `UInt8("+1", radix: 16)` is 1.
    func testMalformedEscapesAreKeptAsTheyAre() {
        XCTAssertEqual(route("GET", "/v1/tables/a%+1"), .success(.snapshot("a%+1")))
        XCTAssertEqual(route("GET", "/v1/tables/a%-0b"), .success(.snapshot("a%-0b")))
        XCTAssertEqual(route("GET", "/v1/tables/a%2"), .success(.snapshot("a%2")))
        XCTAssertEqual(route("GET", "/v1/tables/%%41"), .success(.snapshot("%A")))
        XCTAssertEqual(
            route("GET", "/v1/tables/t/history", "order=%2Boldest").failureStatus, 400, "+oldest is no order")
        XCTAssertEqual(
            route("GET", "/v1/tables/t/history", "order=old%65st"), .success(.history("t", query: ["order": "oldest"])))
    }

    func testUnknownPathsWrongMethodsAndBadQueriesAreRefused() {
        XCTAssertEqual(route("GET", "/v1/table").failureStatus, 404)
        XCTAssertEqual(route("GET", "/v1/tables/").failureStatus, 404)
        XCTAssertEqual(route("GET", "/v1/tables/t/rows").failureStatus, 404)
        XCTAssertEqual(route("GET", "/v1/tables/t/intents/x").failureStatus, 404)
        XCTAssertEqual(route("PUT", "/v1/tables/t").failureStatus, 405)
        XCTAssertEqual(route("GET", "/v1/tables/t/intents").failureStatus, 405)
        XCTAssertEqual(route("POST", "/v1/tables/t/history").failureStatus, 405)
        XCTAssertEqual(route("HEAD", "/v1/tables/t/events").failureStatus, 405)
        XCTAssertEqual(route("DELETE", "/v1/tables").failureStatus, 405)
        XCTAssertEqual(route("GET", "/v1/tables/t/snapshot").failureStatus, 400)
        XCTAssertEqual(route("GET", "/v1/tables/t/snapshot", "version=-1").failureStatus, 400)
        XCTAssertEqual(route("GET", "/v1/tables/t/history", "limit=ten").failureStatus, 400)
        XCTAssertEqual(route("GET", "/v1/tables/t/history", "order=sideways").failureStatus, 400)
        XCTAssertEqual(route("GET", "/v1/tables/t/history", "colour=red").failureStatus, 400)
        guard case .failure(.methodNotAllowed(_, _, let allowed)) = route("PUT", "/v1/tables/t") else {
            return XCTFail("PUT on a table is not allowed")
        }
        XCTAssertEqual(allowed, ["GET", "DELETE"])
    }

    func testRoutesBecomeTheProtocolsRequests() throws {
        func message(_ route: APIRoute, _ body: String = "", key: String? = nil, resume: EventStreamPosition? = nil)
            throws -> JSONValue
        {
            try APIRequest.message(for: route, body: Array(body.utf8), idempotencyKey: key, resume: resume).get()
        }
        XCTAssertEqual(
            try message(.intent("t"), #"{"type":"insert","at":[0,0],"value":1}"#, key: "k1"),
            ["type": "insert", "table": "t", "at": [0, 0], "value": 1, "ref": "k1"])
        XCTAssertEqual(
            try message(.events("t"), resume: EventStreamPosition(epoch: "ab12", version: 4)),
            ["type": "subscribe", "table": "t", "since": 4, "epoch": "ab12", "ref": "http"])
        XCTAssertEqual(
            try message(.setRules("t"), #"{"moves":"none"}"#),
            ["type": "setRules", "table": "t", "rules": ["moves": "none"], "ref": "http"])
        for (route, body) in [
            (APIRoute.intent("t"), #"{"type":"subscribe","table":"t"}"#),
            (.intent("t"), #"{"type":"insert","table":"u"}"#),
            (.intent("t"), #"{"type":"insert","ref":"r"}"#), (.intent("t"), "[]"), (.intent("t"), "{"),
            (.intent("t"), ""), (.createTable, #"{"type":"dropTable","table":"t"}"#), (.setRules("t"), "1"),
        ] {
            XCTAssertThrowsError(try message(route, body), body) { error in
                XCTAssertEqual((error as? ProtocolError)?.code, .badRequest)
            }
        }
    }

    func testLastEventIDIsAnEpochAndAVersionOrAVersion() {
        XCTAssertEqual(
            EventStreamPosition(lastEventID: "3f2a16d9:12"), EventStreamPosition(epoch: "3f2a16d9", version: 12))
        XCTAssertEqual(EventStreamPosition(lastEventID: " 12 "), EventStreamPosition(epoch: nil, version: 12))
        XCTAssertNil(EventStreamPosition(lastEventID: ""))
        XCTAssertNil(EventStreamPosition(lastEventID: "abc"))
        XCTAssertNil(EventStreamPosition(lastEventID: ":12"))
        XCTAssertNil(EventStreamPosition(lastEventID: "ab:-1"))
        XCTAssertNil(EventStreamPosition(lastEventID: "a b:1"))
        XCTAssertEqual(EventStreamPosition(epoch: "ab", version: 3).id, "ab:3")
    }

    func testEventsAreFramedOneDataLineEach() {
        XCTAssertEqual(
            String(
                decoding: EventStreamFraming.event("update", id: "ab:3", data: Array(#"{"a":1}"#.utf8)), as: UTF8.self),
            "event: update\nid: ab:3\ndata: {\"a\":1}\n\n")
        XCTAssertEqual(
            String(decoding: EventStreamFraming.event("presence", id: nil, data: Array("{\n}".utf8)), as: UTF8.self),
            "event: presence\ndata: {}\n\n")
        XCTAssertEqual(String(decoding: EventStreamFraming.heartbeat, as: UTF8.self), ": heartbeat\n\n")
        XCTAssertEqual(
            String(decoding: EventStreamFraming.close(code: 4000, reason: "queue \"full\"\n"), as: UTF8.self),
            "event: close\ndata: {\"code\":4000,\"reason\":\"queue \\\"full\\\" \"}\n\n")
    }

    func testAnAnchorIsOpenedPerTokenInUseAndClosedOnceIdle() {
        let anchors = SessionAnchors()
        func kinds(_ events: [RouterEvent]) -> [String] {
            events.map { event in
                switch event {
                case .transport(.opened(let info)): "opened \(info.id.rawValue == SessionAnchors.firstID)"
                case .transport(.message(_, let message)): String(decoding: message.bytes, as: UTF8.self)
                case .transport(.closed(let id, _)): "closed \(id.rawValue)"
                default: "other"
                }
            }
        }
        XCTAssertEqual(
            kinds(anchors.touch(token: "t1", now: 100)),
            ["opened true", #"{"client":"http","ref":"hello","token":"t1","type":"hello"}"#])
        XCTAssertEqual(kinds(anchors.touch(token: "t1", now: 110)), [])
        XCTAssertEqual(kinds(anchors.touch(token: nil, now: 120)).count, 2)
        // t1 was last used at 110: idle for more than 30 s at 141, closed at the next sweep.
        XCTAssertEqual(kinds(anchors.touch(token: nil, now: 141)), ["closed \(SessionAnchors.firstID)"])
        XCTAssertEqual(kinds(anchors.touch(token: "t1", now: 142)).first, "opened false")
    }

}

extension Result where Failure == APIRefusal {
    fileprivate var failureStatus: Int? {
        if case .failure(let refusal) = self { refusal.status } else { nil }
    }
}
