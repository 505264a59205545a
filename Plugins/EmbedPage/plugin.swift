import Foundation
import PackagePlugin

/// Embeds the browser page (`web-client-protocol/client`, its top-level files: the tests in its folders are not
/// served) into the target as `EmbeddedPage.files`, so the executable serves it from any working directory.
@main
struct EmbedPage: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let page = context.package.directoryURL.appending(path: "web-client-protocol/client")
        let files = try FileManager.default.contentsOfDirectory(
            at: page, includingPropertiesForKeys: [.isRegularFileKey]
        )
        .filter { try $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile == true }
        .sorted { $0.lastPathComponent < $1.lastPathComponent }
        // The HTTP API's document, served at /v1/openapi.yaml, and the protocol's schemas it refers to, served at
        // /v1/schema/NAME (embedded as `schema/NAME`).
        let document = context.package.directoryURL.appending(path: "web-client-protocol/openapi.yaml")
        let schemas = try FileManager.default.contentsOfDirectory(
            at: context.package.directoryURL.appending(path: "web-client-protocol/schema"),
            includingPropertiesForKeys: nil
        )
        .filter { $0.pathExtension == "json" }
        .sorted { $0.lastPathComponent < $1.lastPathComponent }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedPage.swift")
        return [
            .buildCommand(
                displayName: "Embedding the page (\(files.count) files), the HTTP API's document and its schemas",
                executable: try context.tool(named: "PageEmbedder").url,
                arguments: [output.path] + (files + [document]).map(\.path)
                    + schemas.map { "schema/\($0.lastPathComponent)=\($0.path)" },
                inputFiles: files + [document] + schemas, outputFiles: [output])
        ]
    }
}
