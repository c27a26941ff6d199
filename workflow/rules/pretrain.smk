rule pretrain:
    """Pretrain ChorusTIC on the synthetic episodic prior (GPU strongly recommended for `paper`).

    `pretrain.<run>.gpus: N` > 1 starts N data-parallel processes with torchrun (one per GPU). An
    interrupted run resumes exactly from its newest state in the run folder instead of starting over.
    """
    output:
        f"{MODELS}/{{run}}/model.safetensors",
    params:
        model_config=lambda w: config["pretrain"][w.run]["model_config"],
        train_config=lambda w: config["pretrain"][w.run]["train_config"],
        extra=lambda w: shlex.join(config["pretrain"][w.run].get("args") or []),
        out_dir=lambda w: f"{MODELS}/{w.run}",
        gpus=lambda w: cr.pretrain_gpus(config, w.run),
        launch=lambda w: launch_prefix(cr.pretrain_gpus(config, w.run)),
        threads_per_process=lambda w, threads: max(1, threads // max(1, cr.pretrain_gpus(config, w.run))),
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
        "{params.launch} pretrain --model-config {params.model_config:q} --train-config {params.train_config:q} "
        "{params.extra} --out-dir {params.out_dir:q} --auto-resume --threads {params.threads_per_process} --no-progress "
        "> {log:q} 2>&1"
