import TablecastServer
import XCTest

final class AccessPolicyTests: XCTestCase {
    private let policy = AccessPolicy(grants: [
        .init(token: "reader", role: .read, tables: [TablePattern("*")]),
        .init(token: "team", role: .write, tables: [TablePattern("team-*"), TablePattern("shared")]),
        .init(token: "team", role: .admin, tables: [TablePattern("team-admin")]),
    ])

    func testOpenPolicyMakesEveryoneAdmin() throws {
        XCTAssertFalse(AccessPolicy.open.requiresToken)
        XCTAssertEqual(AccessPolicy.open.role(token: nil, table: "anything"), .admin)
        XCTAssertNoThrow(try AccessPolicy.open.authorize(token: nil, table: "t", needs: .admin))
    }

    func testHighestMatchingGrantWins() {
        XCTAssertEqual(policy.role(token: "team", table: "team-admin"), .admin)
        XCTAssertEqual(policy.role(token: "team", table: "team-x"), .write)
        XCTAssertEqual(policy.role(token: "team", table: "shared"), .write)
        XCTAssertNil(policy.role(token: "team", table: "other"))
        XCTAssertEqual(policy.role(token: "reader", table: "other"), .read)
    }

    func testMissingTokenIsUnauthorized() {
        XCTAssertThrowsError(try policy.authorize(token: nil, table: "shared", needs: .read)) { error in
            XCTAssertEqual((error as? AccessPolicy.Denial)?.code, .unauthorized)
            XCTAssertEqual((error as? AccessPolicy.Denial)?.message, "this server requires a token: send one in hello")
        }
    }

    func testUnknownTokenIsUnauthorized() {
        XCTAssertFalse(policy.recognizes(token: "guess"))
        XCTAssertThrowsError(try policy.authorize(token: "guess", table: "shared", needs: .read)) { error in
            XCTAssertEqual((error as? AccessPolicy.Denial)?.code, .unauthorized)
        }
    }

    func testInsufficientRoleIsForbiddenAndNamesTheTable() {
        XCTAssertThrowsError(try policy.authorize(token: "reader", table: "shared", needs: .write)) { error in
            XCTAssertEqual((error as? AccessPolicy.Denial)?.code, .forbidden)
            XCTAssertEqual((error as? AccessPolicy.Denial)?.message, "this token may not write table 'shared'")
        }
        XCTAssertThrowsError(try policy.authorize(token: "team", table: "elsewhere", needs: .read)) { error in
            XCTAssertEqual((error as? AccessPolicy.Denial)?.code, .forbidden)
        }
        XCTAssertNoThrow(try policy.authorize(token: "team", table: "team-admin", needs: .admin))
    }

    func testAuthenticateNeedsAKnownTokenOnlyWhenThePolicyHasTokens() {
        XCTAssertNoThrow(try AccessPolicy.open.authenticate(token: nil))
        XCTAssertNoThrow(try policy.authenticate(token: "reader"))
        XCTAssertThrowsError(try policy.authenticate(token: nil)) { error in
            XCTAssertEqual((error as? AccessPolicy.Denial)?.message, "this server requires a token: send one in hello")
        }
        XCTAssertThrowsError(try policy.authenticate(token: "guess")) { error in
            XCTAssertEqual((error as? AccessPolicy.Denial)?.code, .unauthorized)
            XCTAssertEqual(
                (error as? AccessPolicy.Denial)?.message, "the token given in hello is not valid on this server")
        }
    }
}
