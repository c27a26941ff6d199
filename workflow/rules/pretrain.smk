rule pretrain:
    """Pretrain ChorusTIC on the synthetic episodic prior (GPU strongly recommended for `paper`).

    An interrupted run resumes exactly from its newest state in the run folder (model, optimizer,
    scheduler, RNG and prior states) instead of starting over.
    """
    output:
        f"{MODELS}/{{run}}/model.safetensors",
    params:
        model_config=lambda w: config["pretrain"][w.run]["model_config"],
        train_config=lambda w: config["pretrain"][w.run]["train_config"],
        extra=lambda w: " ".join(config["pretrain"][w.run].get("args") or []),
        out_dir=lambda w: f"{MODELS}/{w.run}",
        gpus=lambda w: cr.pretrain_gpus(config, w.run),
    conda:
        "../envs/chorustic.yaml"
    log:
        f"{LOGS}/pretrain/{{run}}.log",
    benchmark:
        f"{LOGS}/benchmarks/pretrain/{{run}}.tsv"
    threads: workflow.cores
    resources:
        **per_job(PRETRAIN_RESOURCES, lambda w: w.run),
    shell:
        "chorustic pretrain --model-config {params.model_config} --train-config {params.train_config} "
        "{params.extra} --out {params.out_dir} --auto-resume --threads {threads} --no-progress > {log} 2>&1"
