import Foundation

/// Builds entity descriptions from an Xcode model file: a `.xcdatamodeld` bundle (its
/// current version, named by `.xccurrentversion`), a `.xcdatamodel` folder, or the
/// `contents` XML inside one.
///
/// Entities, attributes (types, defaults, optionality, transient flags), relationships
/// (destinations, inverses, delete rules, counts), fetch indexes, uniqueness constraints
/// and composite attributes become the same descriptions a model built in code has, so
/// the model equals (`==`) the one built from classes with the same declarations.
struct ModelFileReader {
    let url: URL
    /// Classes to represent entities, matched by `representedClassName`.
    let classes: [NSManagedObject.Type]

    /// What a read produced.
    struct Result {
        var entities: [NSEntityDescription]
        /// The model's `userDefinedModelVersionIdentifier`, if it has one.
        var versionIdentifier: String?
    }

    /// Reads the model file at `url`.
    /// - Throws: ``ModelFileError`` naming the file, line, entity and property at fault.
    func read() throws(ModelFileError) -> Result {
        let contents = try Self.contentsURL(for: url)
        let data: Data
        do { data = try Data(contentsOf: contents) } catch { throw ModelFileError(.missingFile, url: contents) }
        let root = try ModelFileElement.parse(data, url: contents)
        guard root.name == "model" else { throw ModelFileError(.notAModel(root.name), url: contents, line: root.line) }
        return try ModelFileBuilder(url: contents, classes: classes).build(root)
    }

    /// The `contents` file that `url` stands for: the current version's inside a
    /// `.xcdatamodeld`, the one inside a `.xcdatamodel`, or `url` itself for a plain file.
    static func contentsURL(for url: URL) throws(ModelFileError) -> URL {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw ModelFileError(.missingFile, url: url)
        }
        guard isDirectory.boolValue else { return url }
        let contents = url.appendingPathComponent("contents")
        if FileManager.default.fileExists(atPath: contents.path) { return contents }
        return try currentVersionContents(inBundle: url)
    }

    /// The `contents` of the current version of a `.xcdatamodeld` bundle: the version named
    /// by `.xccurrentversion` (`_XCCurrentVersionName`), or the only version when the bundle
    /// has one and no such file.
    static func currentVersionContents(inBundle bundle: URL) throws(ModelFileError) -> URL {
        let versionFile = bundle.appendingPathComponent(".xccurrentversion")
        let name: String
        if let data = try? Data(contentsOf: versionFile) {
            let plist = try? PropertyListSerialization.propertyList(from: data, format: nil)
            guard let current = (plist as? [String: Any])?["_XCCurrentVersionName"] as? String else {
                throw ModelFileError(.unknownCurrentVersion(""), url: versionFile)
            }
            name = current
        } else {
            let versions = ((try? FileManager.default.contentsOfDirectory(atPath: bundle.path)) ?? [])
                .filter { $0.hasSuffix(".xcdatamodel") }
            guard versions.count == 1 else { throw ModelFileError(.missingFile, url: versionFile) }
            name = versions[0]
        }
        let contents = bundle.appendingPathComponent(name).appendingPathComponent("contents")
        guard FileManager.default.fileExists(atPath: contents.path) else {
            throw ModelFileError(.unknownCurrentVersion(name), url: versionFile)
        }
        return contents
    }
}
