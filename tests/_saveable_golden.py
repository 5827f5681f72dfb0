"""What saving each of tests/_saveable_shapes.py's outputs gave before each part was cleaned
once (``model_dump_json()`` of commit a5b5f20, where every nested model cleaned its part and
its parent all of it again). Generated; do not edit by hand."""

SAVED = {
    "clean_run": (
        '{"raw":"final \ufffd","task_outputs":[{"raw":"plain text","parsed":null,"task_descript'
        'ion":"Describe","agent_role":"Writer","duration":"PT0S","tool_calls":[],"llm_calls":0,'
        '"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0},"returned_immediate'
        'ly":false,"task_name":null,"cost_usd":null,"metrics":{"model_seconds":0.0,"tool_second'
        's":0.0,"review_wait_seconds":0.0,"retries":0}},{"raw":"done \ufffd with sk-proj-Abcdef'
        "ghijklmnop0123456789QRSTuvwx and zero\u200bwidth, bidi\u202eflip, nul\\u0000, line"
        '\u2028sep, bom\ufeff","parsed":{"k":["v\ufffd",{"deep":[1,2.5,null,true]}],"ok":"caf'
        '\xe9"},"task_description":"Read caf\ufffd.txt","agent_role":"Reader \ufffd","duration"'
        ':"PT1.5S","tool_calls":[{"name":"tool0","arguments":"{\\"q\\": \\"caf\ufffd sk-proj-Ab'
        'cdefghijklmnop0123456789QRSTuvwx\\"}","model_arguments":null,"output":"found \ufffd'
        '\ufffd zero\u200bwidth, bidi\u202eflip, nul\\u0000, line\u2028sep, bom\ufeff","is_succ'
        'ess":true,"duration":"PT0S","return_behavior":"to_llm","structured_output":"{\'name\\'
        '\\udce9\': [\'caf\\\\udce9.txt\'], \'n\': 3}"},{"name":"tool1","arguments":"{\\"q\\": '
        '\\"caf\ufffd sk-proj-Abcdefghijklmnop0123456789QRSTuvwx\\"}","model_arguments":null,"o'
        'utput":"found \ufffd\ufffd zero\u200bwidth, bidi\u202eflip, nul\\u0000, line\u2028sep,'
        ' bom\ufeff","is_success":false,"duration":"PT0.001S","return_behavior":"to_llm","struc'
        'tured_output":"custom \ufffd object"},{"name":"tool2","arguments":"{\\"q\\": \\"caf'
        '\ufffd sk-proj-Abcdefghijklmnop0123456789QRSTuvwx\\"}","model_arguments":null,"output"'
        ':"found \ufffd\ufffd zero\u200bwidth, bidi\u202eflip, nul\\u0000, line\u2028sep, bom'
        '\ufeff","is_success":true,"duration":"PT0.002S","return_behavior":"to_llm","structured'
        "_output\":\"{'set': {1}, 'obj': <Custom>, 'bytes': b'\\\\xff\\\\xfe'}\"},{\"name\":"
        '"tool3","arguments":"{\\"q\\": \\"caf\ufffd sk-proj-Abcdefghijklmnop0123456789QRSTuvwx'
        '\\"}","model_arguments":null,"output":"found \ufffd\ufffd zero\u200bwidth, bidi\u202ef'
        'lip, nul\\u0000, line\u2028sep, bom\ufeff","is_success":false,"duration":"PT0.003S","r'
        'eturn_behavior":"to_llm","structured_output":"<unprintable Hostile>"},{"name":"tool4",'
        '"arguments":"{\\"q\\": \\"caf\ufffd sk-proj-Abcdefghijklmnop0123456789QRSTuvwx\\"}","m'
        'odel_arguments":null,"output":"found \ufffd\ufffd zero\u200bwidth, bidi\u202eflip, nul'
        '\\u0000, line\u2028sep, bom\ufeff","is_success":true,"duration":"PT0.004S","return_beh'
        'avior":"to_llm","structured_output":"{\\"raw\\":\\"inner \ufffd\\",\\"parsed\\":null,'
        '\\"task_description\\":\\"d\\",\\"agent_role\\":\\"r\\",\\"duration\\":\\"PT0S\\",\\"t'
        'ool_calls\\":[],\\"llm_calls\\":0,\\"usage\\":{\\"prompt_tokens\\":0,\\"completion_tok'
        'ens\\":0,\\"total_tokens\\":0},\\"returned_immediately\\":false,\\"task_name\\":null,'
        '\\"cost_usd\\":null,\\"metrics\\":{\\"model_seconds\\":0.0,\\"tool_seconds\\":0.0,\\"r'
        'eview_wait_seconds\\":0.0,\\"retries\\":0}}"},{"name":"tool5","arguments":"{\\"q\\": '
        '\\"caf\ufffd sk-proj-Abcdefghijklmnop0123456789QRSTuvwx\\"}","model_arguments":null,"o'
        'utput":"found \ufffd\ufffd zero\u200bwidth, bidi\u202eflip, nul\\u0000, line\u2028sep,'
        ' bom\ufeff","is_success":false,"duration":"PT0.005S","return_behavior":"to_llm","struc'
        'tured_output":"plain"}],"llm_calls":3,"usage":{"prompt_tokens":0,"completion_tokens":0'
        ',"total_tokens":0},"returned_immediately":false,"task_name":"read\ufffd","cost_usd":nu'
        'll,"metrics":{"model_seconds":0.0,"tool_seconds":0.0,"review_wait_seconds":0.0,"retrie'
        's":0}},{"raw":"ok \ufffd","parsed":{"obj":"custom \ufffd object","k":"\ufffd"},"task_d'
        'escription":"x","agent_role":"y","duration":"PT0S","tool_calls":[],"llm_calls":0,"usag'
        'e":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0},"returned_immediately":f'
        'alse,"task_name":null,"cost_usd":null,"metrics":{"model_seconds":0.0,"tool_seconds":0.'
        '0,"review_wait_seconds":0.0,"retries":0}}],"exit_reason":"completed","total_duration":'
        '"PT0S","total_tool_calls":0,"usage":{"prompt_tokens":0,"completion_tokens":0,"total_to'
        'kens":0},"tool_metrics":{"tool":{"calls":2,"note":"caf\ufffd"}},"run_id":"","trace":{"'
        'schema_version":1,"run_id":"r1","parent_run_id":null,"capture":"standard","status":"ru'
        'nning","started_at":"2026-11-27T19:00:00Z","ended_at":null,"workflow":"sequential","in'
        'puts":{"who":"caf\ufffd","n":1},"tasks":[{"index":1,"description":"Read \ufffd","agent'
        '_role":"Reader","task_name":null,"model":null,"status":"running","started_at":"2026-11'
        '-27T19:00:00Z","ended_at":null,"system_prompt":null,"user_prompt":null,"model_turns":['
        '{"call_id":"c0","model":"scripted","agent_role":"Reader","started_at":"2026-11-27T19:0'
        '0:00Z","latency_seconds":0.0,"attempts":1,"message_count":0,"messages":[{"role":"user"'
        ',"content":"turn 0 \ufffd sk-proj-Abcdefghijklmnop0123456789QRSTuvwx"}],"content":"ans'
        'wer 0 zero\u200bwidth, bidi\u202eflip, nul\\u0000, line\u2028sep, bom\ufeff","tool_cal'
        'ls":[],"finish_reason":null,"usage":{"prompt_tokens":0,"completion_tokens":0,"total_to'
        'kens":0},"cost_usd":null,"error":null},{"call_id":"c1","model":"scripted","agent_role"'
        ':"Reader","started_at":"2026-11-27T19:00:00Z","latency_seconds":0.0,"attempts":1,"mess'
        'age_count":0,"messages":[{"role":"user","content":"turn 1 \ufffd sk-proj-Abcdefghijklm'
        'nop0123456789QRSTuvwx"}],"content":"answer 1 zero\u200bwidth, bidi\u202eflip, nul\\u00'
        '00, line\u2028sep, bom\ufeff","tool_calls":[],"finish_reason":null,"usage":{"prompt_to'
        'kens":0,"completion_tokens":0,"total_tokens":0},"cost_usd":null,"error":null},{"call_i'
        'd":"c2","model":"scripted","agent_role":"Reader","started_at":"2026-11-27T19:00:00Z","'
        'latency_seconds":0.0,"attempts":1,"message_count":0,"messages":[{"role":"user","conten'
        't":"turn 2 \ufffd sk-proj-Abcdefghijklmnop0123456789QRSTuvwx"}],"content":"answer 2 ze'
        'ro\u200bwidth, bidi\u202eflip, nul\\u0000, line\u2028sep, bom\ufeff","tool_calls":[],"'
        'finish_reason":null,"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}'
        ',"cost_usd":null,"error":null}],"tool_calls":[{"call_id":null,"name":"t","arguments":"'
        '{}","model_arguments":null,"started_at":null,"output":"o\ufffd","is_success":null,"dur'
        'ation_seconds":0.0,"return_behavior":null}],"reviews":[],"delegations":[],"events":[],'
        '"guardrails":[],"output":"done \ufffd","error":null,"usage":{"prompt_tokens":0,"comple'
        'tion_tokens":0,"total_tokens":0},"cost_usd":null,"metrics":{"model_seconds":0.0,"tool_'
        'seconds":0.0,"review_wait_seconds":0.0,"retries":0}}],"events":[],"exit_reason":null,"'
        'error":null,"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0},"cost_u'
        'sd":null},"cost_usd":null,"loops":{"l":{"iterations":1,"stopped_by":"until","history":'
        '[{"w":{"raw":"done \ufffd with sk-proj-Abcdefghijklmnop0123456789QRSTuvwx and zero'
        '\u200bwidth, bidi\u202eflip, nul\\u0000, line\u2028sep, bom\ufeff","parsed":{"k":["v'
        '\ufffd",{"deep":[1,2.5,null,true]}],"ok":"caf\xe9"},"task_description":"Read caf\ufffd'
        '.txt","agent_role":"Reader \ufffd","duration":"PT1.5S","tool_calls":[{"name":"tool0","'
        'arguments":"{\\"q\\": \\"caf\ufffd sk-proj-Abcdefghijklmnop0123456789QRSTuvwx\\"}","mo'
        'del_arguments":null,"output":"found \ufffd\ufffd zero\u200bwidth, bidi\u202eflip, nul'
        '\\u0000, line\u2028sep, bom\ufeff","is_success":true,"duration":"PT0S","return_behavio'
        "r\":\"to_llm\",\"structured_output\":\"{'name\\\\udce9': ['caf\\\\udce9.txt'], 'n': 3}"
        '"},{"name":"tool1","arguments":"{\\"q\\": \\"caf\ufffd sk-proj-Abcdefghijklmnop0123456'
        '789QRSTuvwx\\"}","model_arguments":null,"output":"found \ufffd\ufffd zero\u200bwidth, '
        'bidi\u202eflip, nul\\u0000, line\u2028sep, bom\ufeff","is_success":false,"duration":"P'
        'T0.001S","return_behavior":"to_llm","structured_output":"custom \ufffd object"},{"name'
        '":"tool2","arguments":"{\\"q\\": \\"caf\ufffd sk-proj-Abcdefghijklmnop0123456789QRSTuv'
        'wx\\"}","model_arguments":null,"output":"found \ufffd\ufffd zero\u200bwidth, bidi'
        '\u202eflip, nul\\u0000, line\u2028sep, bom\ufeff","is_success":true,"duration":"PT0.00'
        '2S","return_behavior":"to_llm","structured_output":"{\'set\': {1}, \'obj\': <Custom>, '
        '\'bytes\': b\'\\\\xff\\\\xfe\'}"},{"name":"tool3","arguments":"{\\"q\\": \\"caf\ufffd '
        'sk-proj-Abcdefghijklmnop0123456789QRSTuvwx\\"}","model_arguments":null,"output":"found'
        ' \ufffd\ufffd zero\u200bwidth, bidi\u202eflip, nul\\u0000, line\u2028sep, bom\ufeff","'
        'is_success":false,"duration":"PT0.003S","return_behavior":"to_llm","structured_output"'
        ':"<unprintable Hostile>"},{"name":"tool4","arguments":"{\\"q\\": \\"caf\ufffd sk-proj-'
        'Abcdefghijklmnop0123456789QRSTuvwx\\"}","model_arguments":null,"output":"found \ufffd'
        '\ufffd zero\u200bwidth, bidi\u202eflip, nul\\u0000, line\u2028sep, bom\ufeff","is_succ'
        'ess":true,"duration":"PT0.004S","return_behavior":"to_llm","structured_output":"{\\"ra'
        'w\\":\\"inner \ufffd\\",\\"parsed\\":null,\\"task_description\\":\\"d\\",\\"agent_role'
        '\\":\\"r\\",\\"duration\\":\\"PT0S\\",\\"tool_calls\\":[],\\"llm_calls\\":0,\\"usage\\'
        '":{\\"prompt_tokens\\":0,\\"completion_tokens\\":0,\\"total_tokens\\":0},\\"returned_i'
        'mmediately\\":false,\\"task_name\\":null,\\"cost_usd\\":null,\\"metrics\\":{\\"model_s'
        'econds\\":0.0,\\"tool_seconds\\":0.0,\\"review_wait_seconds\\":0.0,\\"retries\\":0}}"}'
        ',{"name":"tool5","arguments":"{\\"q\\": \\"caf\ufffd sk-proj-Abcdefghijklmnop012345678'
        '9QRSTuvwx\\"}","model_arguments":null,"output":"found \ufffd\ufffd zero\u200bwidth, bi'
        'di\u202eflip, nul\\u0000, line\u2028sep, bom\ufeff","is_success":false,"duration":"PT0'
        '.005S","return_behavior":"to_llm","structured_output":"plain"}],"llm_calls":3,"usage":'
        '{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0},"returned_immediately":fals'
        'e,"task_name":"read\ufffd","cost_usd":null,"metrics":{"model_seconds":0.0,"tool_second'
        's":0.0,"review_wait_seconds":0.0,"retries":0}}}]}},"graphs":{"g":{"path":["a\ufffd"],"'
        'stopped_by":"end","outputs":{"a":{"raw":"ok \ufffd","parsed":{"obj":"custom \ufffd obj'
        'ect","k":"\ufffd"},"task_description":"x","agent_role":"y","duration":"PT0S","tool_cal'
        'ls":[],"llm_calls":0,"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0'
        '},"returned_immediately":false,"task_name":null,"cost_usd":null,"metrics":{"model_seco'
        'nds":0.0,"tool_seconds":0.0,"review_wait_seconds":0.0,"retries":0}}}}}}'
    ),
    "plain": (
        '{"raw":"plain text","parsed":null,"task_description":"Describe","agent_role":"Writer",'
        '"duration":"PT0S","tool_calls":[],"llm_calls":0,"usage":{"prompt_tokens":0,"completion'
        '_tokens":0,"total_tokens":0},"returned_immediately":false,"task_name":null,"cost_usd":'
        'null,"metrics":{"model_seconds":0.0,"tool_seconds":0.0,"review_wait_seconds":0.0,"retr'
        'ies":0}}'
    ),
    "odd": (
        '{"raw":"done \ufffd with sk-proj-Abcdefghijklmnop0123456789QRSTuvwx and zero\u200bwidt'
        'h, bidi\u202eflip, nul\\u0000, line\u2028sep, bom\ufeff","parsed":{"k":["v\ufffd",{"de'
        'ep":[1,2.5,null,true]}],"ok":"caf\xe9"},"task_description":"Read caf\ufffd.txt","agent'
        '_role":"Reader \ufffd","duration":"PT1.5S","tool_calls":[{"name":"tool0","arguments":"'
        '{\\"q\\": \\"caf\ufffd sk-proj-Abcdefghijklmnop0123456789QRSTuvwx\\"}","model_argument'
        's":null,"output":"found \ufffd\ufffd zero\u200bwidth, bidi\u202eflip, nul\\u0000, line'
        '\u2028sep, bom\ufeff","is_success":true,"duration":"PT0S","return_behavior":"to_llm","'
        "structured_output\":\"{'name\\\\udce9': ['caf\\\\udce9.txt'], 'n': 3}\"},{\"name\":\"t"
        'ool1","arguments":"{\\"q\\": \\"caf\ufffd sk-proj-Abcdefghijklmnop0123456789QRSTuvwx\\'
        '"}","model_arguments":null,"output":"found \ufffd\ufffd zero\u200bwidth, bidi\u202efli'
        'p, nul\\u0000, line\u2028sep, bom\ufeff","is_success":false,"duration":"PT0.001S","ret'
        'urn_behavior":"to_llm","structured_output":"custom \ufffd object"},{"name":"tool2","ar'
        'guments":"{\\"q\\": \\"caf\ufffd sk-proj-Abcdefghijklmnop0123456789QRSTuvwx\\"}","mode'
        'l_arguments":null,"output":"found \ufffd\ufffd zero\u200bwidth, bidi\u202eflip, nul\\u'
        '0000, line\u2028sep, bom\ufeff","is_success":true,"duration":"PT0.002S","return_behavi'
        "or\":\"to_llm\",\"structured_output\":\"{'set': {1}, 'obj': <Custom>, 'bytes': b'\\\\"
        'xff\\\\xfe\'}"},{"name":"tool3","arguments":"{\\"q\\": \\"caf\ufffd sk-proj-Abcdefghij'
        'klmnop0123456789QRSTuvwx\\"}","model_arguments":null,"output":"found \ufffd\ufffd zero'
        '\u200bwidth, bidi\u202eflip, nul\\u0000, line\u2028sep, bom\ufeff","is_success":false,'
        '"duration":"PT0.003S","return_behavior":"to_llm","structured_output":"<unprintable Hos'
        'tile>"},{"name":"tool4","arguments":"{\\"q\\": \\"caf\ufffd sk-proj-Abcdefghijklmnop01'
        '23456789QRSTuvwx\\"}","model_arguments":null,"output":"found \ufffd\ufffd zero\u200bwi'
        'dth, bidi\u202eflip, nul\\u0000, line\u2028sep, bom\ufeff","is_success":true,"duration'
        '":"PT0.004S","return_behavior":"to_llm","structured_output":"{\\"raw\\":\\"inner '
        '\ufffd\\",\\"parsed\\":null,\\"task_description\\":\\"d\\",\\"agent_role\\":\\"r\\",\\'
        '"duration\\":\\"PT0S\\",\\"tool_calls\\":[],\\"llm_calls\\":0,\\"usage\\":{\\"prompt_t'
        'okens\\":0,\\"completion_tokens\\":0,\\"total_tokens\\":0},\\"returned_immediately\\":'
        'false,\\"task_name\\":null,\\"cost_usd\\":null,\\"metrics\\":{\\"model_seconds\\":0.0,'
        '\\"tool_seconds\\":0.0,\\"review_wait_seconds\\":0.0,\\"retries\\":0}}"},{"name":"tool'
        '5","arguments":"{\\"q\\": \\"caf\ufffd sk-proj-Abcdefghijklmnop0123456789QRSTuvwx\\"}"'
        ',"model_arguments":null,"output":"found \ufffd\ufffd zero\u200bwidth, bidi\u202eflip, '
        'nul\\u0000, line\u2028sep, bom\ufeff","is_success":false,"duration":"PT0.005S","return'
        '_behavior":"to_llm","structured_output":"plain"}],"llm_calls":3,"usage":{"prompt_token'
        's":0,"completion_tokens":0,"total_tokens":0},"returned_immediately":false,"task_name":'
        '"read\ufffd","cost_usd":null,"metrics":{"model_seconds":0.0,"tool_seconds":0.0,"review'
        '_wait_seconds":0.0,"retries":0}}'
    ),
    "unknown": (
        '{"raw":"ok \ufffd","parsed":{"obj":"custom \ufffd object","k":"\ufffd"},"task_descript'
        'ion":"x","agent_role":"y","duration":"PT0S","tool_calls":[],"llm_calls":0,"usage":{"pr'
        'ompt_tokens":0,"completion_tokens":0,"total_tokens":0},"returned_immediately":false,"t'
        'ask_name":null,"cost_usd":null,"metrics":{"model_seconds":0.0,"tool_seconds":0.0,"revi'
        'ew_wait_seconds":0.0,"retries":0}}'
    ),
    "record": (
        '{"name":"tool2","arguments":"{\\"q\\": \\"caf\ufffd sk-proj-Abcdefghijklmnop0123456789'
        'QRSTuvwx\\"}","model_arguments":null,"output":"found \ufffd\ufffd zero\u200bwidth, bid'
        'i\u202eflip, nul\\u0000, line\u2028sep, bom\ufeff","is_success":true,"duration":"PT0.0'
        '02S","return_behavior":"to_llm","structured_output":"{\'set\': {1}, \'obj\': <Custom>,'
        " 'bytes': b'\\\\xff\\\\xfe'}\"}"
    ),
    "trace": (
        '{"schema_version":1,"run_id":"r1","parent_run_id":null,"capture":"standard","status":"'
        'running","started_at":"2026-11-27T19:00:00Z","ended_at":null,"workflow":"sequential","'
        'inputs":{"who":"caf\ufffd","n":1},"tasks":[{"index":1,"description":"Read \ufffd","age'
        'nt_role":"Reader","task_name":null,"model":null,"status":"running","started_at":"2026-'
        '11-27T19:00:00Z","ended_at":null,"system_prompt":null,"user_prompt":null,"model_turns"'
        ':[{"call_id":"c0","model":"scripted","agent_role":"Reader","started_at":"2026-11-27T19'
        ':00:00Z","latency_seconds":0.0,"attempts":1,"message_count":0,"messages":[{"role":"use'
        'r","content":"turn 0 \ufffd sk-proj-Abcdefghijklmnop0123456789QRSTuvwx"}],"content":"a'
        'nswer 0 zero\u200bwidth, bidi\u202eflip, nul\\u0000, line\u2028sep, bom\ufeff","tool_c'
        'alls":[],"finish_reason":null,"usage":{"prompt_tokens":0,"completion_tokens":0,"total_'
        'tokens":0},"cost_usd":null,"error":null},{"call_id":"c1","model":"scripted","agent_rol'
        'e":"Reader","started_at":"2026-11-27T19:00:00Z","latency_seconds":0.0,"attempts":1,"me'
        'ssage_count":0,"messages":[{"role":"user","content":"turn 1 \ufffd sk-proj-Abcdefghijk'
        'lmnop0123456789QRSTuvwx"}],"content":"answer 1 zero\u200bwidth, bidi\u202eflip, nul\\u'
        '0000, line\u2028sep, bom\ufeff","tool_calls":[],"finish_reason":null,"usage":{"prompt_'
        'tokens":0,"completion_tokens":0,"total_tokens":0},"cost_usd":null,"error":null},{"call'
        '_id":"c2","model":"scripted","agent_role":"Reader","started_at":"2026-11-27T19:00:00Z"'
        ',"latency_seconds":0.0,"attempts":1,"message_count":0,"messages":[{"role":"user","cont'
        'ent":"turn 2 \ufffd sk-proj-Abcdefghijklmnop0123456789QRSTuvwx"}],"content":"answer 2 '
        'zero\u200bwidth, bidi\u202eflip, nul\\u0000, line\u2028sep, bom\ufeff","tool_calls":[]'
        ',"finish_reason":null,"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":'
        '0},"cost_usd":null,"error":null}],"tool_calls":[{"call_id":null,"name":"t","arguments"'
        ':"{}","model_arguments":null,"started_at":null,"output":"o\ufffd","is_success":null,"d'
        'uration_seconds":0.0,"return_behavior":null}],"reviews":[],"delegations":[],"events":['
        '],"guardrails":[],"output":"done \ufffd","error":null,"usage":{"prompt_tokens":0,"comp'
        'letion_tokens":0,"total_tokens":0},"cost_usd":null,"metrics":{"model_seconds":0.0,"too'
        'l_seconds":0.0,"review_wait_seconds":0.0,"retries":0}}],"events":[],"exit_reason":null'
        ',"error":null,"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0},"cost'
        '_usd":null}'
    ),
    "run": (
        "\"{'raw': 'final \\\\ud800', 'task_outputs': [{'raw': 'plain text', 'parsed"
        "': None, 'task_description': 'Describe', 'agent_role': 'Writer', 'duration': datetime."
        "timedelta(0), 'tool_calls': [], 'llm_calls': 0, 'usage': {'prompt_tokens': 0, 'complet"
        "ion_tokens': 0, 'total_tokens': 0}, 'returned_immediately': False, 'task_name': None, "
        "'cost_usd': None, 'metrics': {'model_seconds': 0.0, 'tool_seconds': 0.0, 'review_wait_"
        "seconds': 0.0, 'retries': 0}}, {'raw': 'done \\\\ud800 with sk-proj-Abcdefghijklmnop01"
        "23456789QRSTuvwx and zero\\\\u200bwidth, bidi\\\\u202eflip, nul\\\\x00, line\\\\u2028s"
        "ep, bom\\\\ufeff', 'parsed': {'k': ['v\\\\ud800', {'deep': [1, 2.5, None, True]}], 'ok"
        "': 'caf\xe9'}, 'task_description': 'Read caf\\\\udce9.txt', 'agent_role': 'Reader \\\\"
        "ud800', 'duration': datetime.timedelta(seconds=1, microseconds=500000), 'tool_calls': "
        "[{'name': 'tool0', 'arguments': '{\\\"q\\\": \\\"caf\\\\udce9 sk-proj-Abcdefghijkl"
        "mnop0123456789QRSTuvwx\\\"}', 'model_arguments': None, 'output': 'found \\\\ud83d"
        "\\\\ude00 zero\\\\u200bwidth, bidi\\\\u202eflip, nul\\\\x00, line\\\\u2028sep, bom\\\\"
        "ufeff', 'is_success': True, 'duration': datetime.timedelta(0), 'return_behavior': <Ret"
        "urnBehavior.TO_LLM: 'to_llm'>, 'structured_output': {'name\\\\udce9': ['caf\\\\udce9.t"
        "xt'], 'n': 3}}, {'name': 'tool1', 'arguments': '{\\\"q\\\": \\\"caf\\\\udce9 sk"
        "-proj-Abcdefghijklmnop0123456789QRSTuvwx\\\"}', 'model_arguments': None, 'output':"
        " 'found \\\\ud83d\\\\ude00 zero\\\\u200bwidth, bidi\\\\u202eflip, nul\\\\x00, line\\\\"
        "u2028sep, bom\\\\ufeff', 'is_success': False, 'duration': datetime.timedelta(microseco"
        "nds=1000), 'return_behavior': <ReturnBehavior.TO_LLM: 'to_llm'>, 'structured_output': "
        "<Custom>}, {'name': 'tool2', 'arguments': '{\\\"q\\\": \\\"caf\\\\udce9 sk-proj-Ab"
        "cdefghijklmnop0123456789QRSTuvwx\\\"}', 'model_arguments': None, 'output': 'found"
        " \\\\ud83d\\\\ude00 zero\\\\u200bwidth, bidi\\\\u202eflip, nul\\\\x00, line\\\\u2028se"
        "p, bom\\\\ufeff', 'is_success': True, 'duration': datetime.timedelta(microseconds=2000"
        "), 'return_behavior': <ReturnBehavior.TO_LLM: 'to_llm'>, 'structured_output': {'set': "
        "{1}, 'obj': <Custom>, 'bytes': b'\\\\xff\\\\xfe'}}, {'name': 'tool3', 'arguments': '{"
        '\\"q\\": \\"caf\\\\udce9 sk-proj-Abcdefghijklmnop0123456789QRSTuvwx\\"}\', \'model_arg'
        "uments': None, 'output': 'found \\\\ud83d\\\\ude00 zero\\\\u200bwidth, bidi\\\\u202efl"
        "ip, nul\\\\x00, line\\\\u2028sep, bom\\\\ufeff', 'is_success': False, 'duration': date"
        "time.timedelta(microseconds=3000), 'return_behavior': <ReturnBehavior.TO_LLM: 'to_llm'"
        ">, 'structured_output': <Hostile>}, {'name': 'tool4', 'arguments': '{\\\"q\\\":"
        " \\\"caf\\\\udce9 sk-proj-Abcdefghijklmnop0123456789QRSTuvwx\\\"}', 'model_arguments'"
        ": None, 'output': 'found \\\\ud83d\\\\ude00 zero\\\\u200bwidth, bidi\\\\u202eflip, nul"
        "\\\\x00, line\\\\u2028sep, bom\\\\ufeff', 'is_success': True, 'duration': datetime.tim"
        "edelta(microseconds=4000), 'return_behavior': <ReturnBehavior.TO_LLM: 'to_llm'>, 'stru"
        "ctured_output': <SavesItsOwn>}, {'name': 'tool5', 'arguments': '{\\\"q\\\": \\\"c"
        "af\\\\udce9 sk-proj-Abcdefghijklmnop0123456789QRSTuvwx\\\"}', 'model_arguments': Non"
        "e, 'output': 'found \\\\ud83d\\\\ude00 zero\\\\u200bwidth, bidi\\\\u202eflip, nul\\\\x"
        "00, line\\\\u2028sep, bom\\\\ufeff', 'is_success': False, 'duration': datetime.timedel"
        "ta(microseconds=5000), 'return_behavior': <ReturnBehavior.TO_LLM: 'to_llm'>, 'structur"
        "ed_output': 'plain'}], 'llm_calls': 3, 'usage': {'prompt_tokens': 0, 'completion_token"
        "s': 0, 'total_tokens': 0}, 'returned_immediately': False, 'task_name': 'read\\\\ud800'"
        ", 'cost_usd': None, 'metrics': {'model_seconds': 0.0, 'tool_seconds': 0.0, 'review_wai"
        "t_seconds': 0.0, 'retries': 0}}, {'raw': 'ok \\\\ud800', 'parsed': {'obj': <Custom>, '"
        "k': '\\\\ud800'}, 'task_description': 'x', 'agent_role': 'y', 'duration': datetime.tim"
        "edelta(0), 'tool_calls': [], 'llm_calls': 0, 'usage': {'prompt_tokens': 0, 'completion"
        "_tokens': 0, 'total_tokens': 0}, 'returned_immediately': False, 'task_name': None, 'co"
        "st_usd': None, 'metrics': {'model_seconds': 0.0, 'tool_seconds': 0.0, 'review_wait_sec"
        "onds': 0.0, 'retries': 0}}], 'exit_reason': <ExitReason.COMPLETED: 'completed'>, 'tota"
        "l_duration': datetime.timedelta(0), 'total_tool_calls': 0, 'usage': {'prompt_tokens': "
        "0, 'completion_tokens': 0, 'total_tokens': 0}, 'tool_metrics': {'tool\\\\ud800': {'cal"
        "ls': 2}, 'odd': <Custom>}, 'run_id': '', 'trace': {'schema_version': 1, 'run_id': 'r1'"
        ", 'parent_run_id': None, 'capture': 'standard', 'status': 'running', 'started_at': dat"
        "etime.datetime(2026, 11, 27, 19, 0, tzinfo=datetime.timezone.utc), 'ended_at': None, '"
        "workflow': 'sequential', 'inputs': {'who': 'caf\\\\udce9', 'n': 1}, 'tasks': [{'index'"
        ": 1, 'description': 'Read \\\\ud800', 'agent_role': 'Reader', 'task_name': None, 'mode"
        "l': None, 'status': 'running', 'started_at': datetime.datetime(2026, 11, 27, 19, 0, tz"
        "info=datetime.timezone.utc), 'ended_at': None, 'system_prompt': None, 'user_prompt': N"
        "one, 'model_turns': [{'call_id': 'c0', 'model': 'scripted', 'agent_role': 'Reader', 's"
        "tarted_at': datetime.datetime(2026, 11, 27, 19, 0, tzinfo=datetime.timezone.utc), 'lat"
        "ency_seconds': 0.0, 'attempts': 1, 'message_count': 0, 'messages': [{'role': 'user', '"
        "content': 'turn 0 \\\\ud800 sk-proj-Abcdefghijklmnop0123456789QRSTuvwx'}], 'content': "
        "'answer 0 zero\\\\u200bwidth, bidi\\\\u202eflip, nul\\\\x00, line\\\\u2028sep, bom\\\\"
        "ufeff', 'tool_calls': [], 'finish_reason': None, 'usage': {'prompt_tokens': 0, 'comple"
        "tion_tokens': 0, 'total_tokens': 0}, 'cost_usd': None, 'error': None}, {'call_id': 'c1"
        "', 'model': 'scripted', 'agent_role': 'Reader', 'started_at': datetime.datetime(2026, "
        "11, 27, 19, 0, tzinfo=datetime.timezone.utc), 'latency_seconds': 0.0, 'attempts': 1, '"
        "message_count': 0, 'messages': [{'role': 'user', 'content': 'turn 1 \\\\ud800 sk-proj-"
        "Abcdefghijklmnop0123456789QRSTuvwx'}], 'content': 'answer 1 zero\\\\u200bwidth, bidi\\"
        "\\u202eflip, nul\\\\x00, line\\\\u2028sep, bom\\\\ufeff', 'tool_calls': [], 'finish_re"
        "ason': None, 'usage': {'prompt_tokens': 0, 'completion_tokens': 0, 'total_tokens': 0},"
        " 'cost_usd': None, 'error': None}, {'call_id': 'c2', 'model': 'scripted', 'agent_role'"
        ": 'Reader', 'started_at': datetime.datetime(2026, 11, 27, 19, 0, tzinfo=datetime.timez"
        "one.utc), 'latency_seconds': 0.0, 'attempts': 1, 'message_count': 0, 'messages': [{'ro"
        "le': 'user', 'content': 'turn 2 \\\\ud800 sk-proj-Abcdefghijklmnop0123456789QRSTuvwx'}"
        "], 'content': 'answer 2 zero\\\\u200bwidth, bidi\\\\u202eflip, nul\\\\x00, line\\\\u20"
        "28sep, bom\\\\ufeff', 'tool_calls': [], 'finish_reason': None, 'usage': {'prompt_token"
        "s': 0, 'completion_tokens': 0, 'total_tokens': 0}, 'cost_usd': None, 'error': None}], "
        "'tool_calls': [{'call_id': None, 'name': 't', 'arguments': '{}', 'model_arguments': No"
        "ne, 'started_at': None, 'output': 'o\\\\udce9', 'is_success': None, 'duration_seconds'"
        ": 0.0, 'return_behavior': None}], 'reviews': [], 'delegations': [], 'events': [], 'gua"
        "rdrails': [], 'output': 'done \\\\ud800', 'error': None, 'usage': {'prompt_tokens': 0,"
        " 'completion_tokens': 0, 'total_tokens': 0}, 'cost_usd': None, 'metrics': {'model_seco"
        "nds': 0.0, 'tool_seconds': 0.0, 'review_wait_seconds': 0.0, 'retries': 0}}], 'events':"
        " [], 'exit_reason': None, 'error': None, 'usage': {'prompt_tokens': 0, 'completion_tok"
        "ens': 0, 'total_tokens': 0}, 'cost_usd': None}, 'cost_usd': None, 'loops': {'l\\\\ud80"
        "0': {'iterations': 1, 'stopped_by': 'until', 'history': [{'w': {'raw': 'done \\\\ud800"
        " with sk-proj-Abcdefghijklmnop0123456789QRSTuvwx and zero\\\\u200bwidth, bidi\\\\u202e"
        "flip, nul\\\\x00, line\\\\u2028sep, bom\\\\ufeff', 'parsed': {'k': ['v\\\\ud800', {'de"
        "ep': [1, 2.5, None, True]}], 'ok': 'caf\xe9'}, 'task_description': 'Read caf\\\\udce9."
        "txt', 'agent_role': 'Reader \\\\ud800', 'duration': datetime.timedelta(seconds=1, micr"
        "oseconds=500000), 'tool_calls': [{'name': 'tool0', 'arguments': '{\\\"q\\\": \\"
        "\"caf\\\\udce9 sk-proj-Abcdefghijklmnop0123456789QRSTuvwx\\\"}', 'model_arguments': N"
        "one, 'output': 'found \\\\ud83d\\\\ude00 zero\\\\u200bwidth, bidi\\\\u202eflip, nul\\"
        "\\x00, line\\\\u2028sep, bom\\\\ufeff', 'is_success': True, 'duration': datetime.timed"
        "elta(0), 'return_behavior': <ReturnBehavior.TO_LLM: 'to_llm'>, 'structured_output': {'"
        "name\\\\udce9': ['caf\\\\udce9.txt'], 'n': 3}}, {'name': 'tool1', 'arguments': '{\\"
        '"q\\": \\"caf\\\\udce9 sk-proj-Abcdefghijklmnop0123456789QRSTuvwx\\"}\', \'model_argum'
        "ents': None, 'output': 'found \\\\ud83d\\\\ude00 zero\\\\u200bwidth, bidi\\\\u202eflip"
        ", nul\\\\x00, line\\\\u2028sep, bom\\\\ufeff', 'is_success': False, 'duration': dateti"
        "me.timedelta(microseconds=1000), 'return_behavior': <ReturnBehavior.TO_LLM: 'to_llm'>,"
        " 'structured_output': <Custom>}, {'name': 'tool2', 'arguments': '{\\\"q\\\": \\"
        "\"caf\\\\udce9 sk-proj-Abcdefghijklmnop0123456789QRSTuvwx\\\"}', 'model_arguments': N"
        "one, 'output': 'found \\\\ud83d\\\\ude00 zero\\\\u200bwidth, bidi\\\\u202eflip, nul\\"
        "\\x00, line\\\\u2028sep, bom\\\\ufeff', 'is_success': True, 'duration': datetime.timed"
        "elta(microseconds=2000), 'return_behavior': <ReturnBehavior.TO_LLM: 'to_llm'>, 'struct"
        "ured_output': {'set': {1}, 'obj': <Custom>, 'bytes': b'\\\\xff\\\\xfe'}}, {'name': 'to"
        "ol3', 'arguments': '{\\\"q\\\": \\\"caf\\\\udce9 sk-proj-Abcdefghijklmnop0123456789QR"
        "STuvwx\\\"}', 'model_arguments': None, 'output': 'found \\\\ud83d\\\\ude00 zero\\"
        "\\u200bwidth, bidi\\\\u202eflip, nul\\\\x00, line\\\\u2028sep, bom\\\\ufeff', 'is_succ"
        "ess': False, 'duration': datetime.timedelta(microseconds=3000), 'return_behavior': <Re"
        "turnBehavior.TO_LLM: 'to_llm'>, 'structured_output': <Hostile>}, {'name': 'tool4', 'ar"
        'guments\': \'{\\"q\\": \\"caf\\\\udce9 sk-proj-Abcdefghijklmnop0123456789QRSTuvwx\\"}'
        "', 'model_arguments': None, 'output': 'found \\\\ud83d\\\\ude00 zero\\\\u200bwidth, bi"
        "di\\\\u202eflip, nul\\\\x00, line\\\\u2028sep, bom\\\\ufeff', 'is_success': True, 'dur"
        "ation': datetime.timedelta(microseconds=4000), 'return_behavior': <ReturnBehavior.TO_L"
        "LM: 'to_llm'>, 'structured_output': <SavesItsOwn>}, {'name': 'tool5', 'arguments': '{"
        '\\"q\\": \\"caf\\\\udce9 sk-proj-Abcdefghijklmnop0123456789QRSTuvwx\\"}\', \'model_arg'
        "uments': None, 'output': 'found \\\\ud83d\\\\ude00 zero\\\\u200bwidth, bidi\\\\u202efl"
        "ip, nul\\\\x00, line\\\\u2028sep, bom\\\\ufeff', 'is_success': False, 'duration': date"
        "time.timedelta(microseconds=5000), 'return_behavior': <ReturnBehavior.TO_LLM: 'to_llm'"
        ">, 'structured_output': 'plain'}], 'llm_calls': 3, 'usage': {'prompt_tokens': 0, 'comp"
        "letion_tokens': 0, 'total_tokens': 0}, 'returned_immediately': False, 'task_name': 're"
        "ad\\\\ud800', 'cost_usd': None, 'metrics': {'model_seconds': 0.0, 'tool_seconds': 0.0,"
        " 'review_wait_seconds': 0.0, 'retries': 0}}}]}}, 'graphs': {'g': {'path': ['a\\\\ud800"
        "'], 'stopped_by': 'end', 'outputs': {'a': {'raw': 'ok \\\\ud800', 'parsed': {'obj': <C"
        "ustom>, 'k': '\\\\ud800'}, 'task_description': 'x', 'agent_role': 'y', 'duration': dat"
        "etime.timedelta(0), 'tool_calls': [], 'llm_calls': 0, 'usage': {'prompt_tokens': 0, 'c"
        "ompletion_tokens': 0, 'total_tokens': 0}, 'returned_immediately': False, 'task_name': "
        "None, 'cost_usd': None, 'metrics': {'model_seconds': 0.0, 'tool_seconds': 0.0, 'review"
        "_wait_seconds': 0.0, 'retries': 0}}}}}}\""
    ),
    "run_without_trace": (
        "\"{'raw': 'final \\\\ud800', 'task_outputs': [{'raw': 'plain text', 'parsed"
        "': None, 'task_description': 'Describe', 'agent_role': 'Writer', 'duration': datetime."
        "timedelta(0), 'tool_calls': [], 'llm_calls': 0, 'usage': {'prompt_tokens': 0, 'complet"
        "ion_tokens': 0, 'total_tokens': 0}, 'returned_immediately': False, 'task_name': None, "
        "'cost_usd': None, 'metrics': {'model_seconds': 0.0, 'tool_seconds': 0.0, 'review_wait_"
        "seconds': 0.0, 'retries': 0}}, {'raw': 'done \\\\ud800 with sk-proj-Abcdefghijklmnop01"
        "23456789QRSTuvwx and zero\\\\u200bwidth, bidi\\\\u202eflip, nul\\\\x00, line\\\\u2028s"
        "ep, bom\\\\ufeff', 'parsed': {'k': ['v\\\\ud800', {'deep': [1, 2.5, None, True]}], 'ok"
        "': 'caf\xe9'}, 'task_description': 'Read caf\\\\udce9.txt', 'agent_role': 'Reader \\\\"
        "ud800', 'duration': datetime.timedelta(seconds=1, microseconds=500000), 'tool_calls': "
        "[{'name': 'tool0', 'arguments': '{\\\"q\\\": \\\"caf\\\\udce9 sk-proj-Abcdefghijkl"
        "mnop0123456789QRSTuvwx\\\"}', 'model_arguments': None, 'output': 'found \\\\ud83d"
        "\\\\ude00 zero\\\\u200bwidth, bidi\\\\u202eflip, nul\\\\x00, line\\\\u2028sep, bom\\\\"
        "ufeff', 'is_success': True, 'duration': datetime.timedelta(0), 'return_behavior': <Ret"
        "urnBehavior.TO_LLM: 'to_llm'>, 'structured_output': {'name\\\\udce9': ['caf\\\\udce9.t"
        "xt'], 'n': 3}}, {'name': 'tool1', 'arguments': '{\\\"q\\\": \\\"caf\\\\udce9 sk"
        "-proj-Abcdefghijklmnop0123456789QRSTuvwx\\\"}', 'model_arguments': None, 'output':"
        " 'found \\\\ud83d\\\\ude00 zero\\\\u200bwidth, bidi\\\\u202eflip, nul\\\\x00, line\\\\"
        "u2028sep, bom\\\\ufeff', 'is_success': False, 'duration': datetime.timedelta(microseco"
        "nds=1000), 'return_behavior': <ReturnBehavior.TO_LLM: 'to_llm'>, 'structured_output': "
        "<Custom>}, {'name': 'tool2', 'arguments': '{\\\"q\\\": \\\"caf\\\\udce9 sk-proj-Ab"
        "cdefghijklmnop0123456789QRSTuvwx\\\"}', 'model_arguments': None, 'output': 'found"
        " \\\\ud83d\\\\ude00 zero\\\\u200bwidth, bidi\\\\u202eflip, nul\\\\x00, line\\\\u2028se"
        "p, bom\\\\ufeff', 'is_success': True, 'duration': datetime.timedelta(microseconds=2000"
        "), 'return_behavior': <ReturnBehavior.TO_LLM: 'to_llm'>, 'structured_output': {'set': "
        "{1}, 'obj': <Custom>, 'bytes': b'\\\\xff\\\\xfe'}}, {'name': 'tool3', 'arguments': '{"
        '\\"q\\": \\"caf\\\\udce9 sk-proj-Abcdefghijklmnop0123456789QRSTuvwx\\"}\', \'model_arg'
        "uments': None, 'output': 'found \\\\ud83d\\\\ude00 zero\\\\u200bwidth, bidi\\\\u202efl"
        "ip, nul\\\\x00, line\\\\u2028sep, bom\\\\ufeff', 'is_success': False, 'duration': date"
        "time.timedelta(microseconds=3000), 'return_behavior': <ReturnBehavior.TO_LLM: 'to_llm'"
        ">, 'structured_output': <Hostile>}, {'name': 'tool4', 'arguments': '{\\\"q\\\":"
        " \\\"caf\\\\udce9 sk-proj-Abcdefghijklmnop0123456789QRSTuvwx\\\"}', 'model_arguments'"
        ": None, 'output': 'found \\\\ud83d\\\\ude00 zero\\\\u200bwidth, bidi\\\\u202eflip, nul"
        "\\\\x00, line\\\\u2028sep, bom\\\\ufeff', 'is_success': True, 'duration': datetime.tim"
        "edelta(microseconds=4000), 'return_behavior': <ReturnBehavior.TO_LLM: 'to_llm'>, 'stru"
        "ctured_output': <SavesItsOwn>}, {'name': 'tool5', 'arguments': '{\\\"q\\\": \\\"c"
        "af\\\\udce9 sk-proj-Abcdefghijklmnop0123456789QRSTuvwx\\\"}', 'model_arguments': Non"
        "e, 'output': 'found \\\\ud83d\\\\ude00 zero\\\\u200bwidth, bidi\\\\u202eflip, nul\\\\x"
        "00, line\\\\u2028sep, bom\\\\ufeff', 'is_success': False, 'duration': datetime.timedel"
        "ta(microseconds=5000), 'return_behavior': <ReturnBehavior.TO_LLM: 'to_llm'>, 'structur"
        "ed_output': 'plain'}], 'llm_calls': 3, 'usage': {'prompt_tokens': 0, 'completion_token"
        "s': 0, 'total_tokens': 0}, 'returned_immediately': False, 'task_name': 'read\\\\ud800'"
        ", 'cost_usd': None, 'metrics': {'model_seconds': 0.0, 'tool_seconds': 0.0, 'review_wai"
        "t_seconds': 0.0, 'retries': 0}}, {'raw': 'ok \\\\ud800', 'parsed': {'obj': <Custom>, '"
        "k': '\\\\ud800'}, 'task_description': 'x', 'agent_role': 'y', 'duration': datetime.tim"
        "edelta(0), 'tool_calls': [], 'llm_calls': 0, 'usage': {'prompt_tokens': 0, 'completion"
        "_tokens': 0, 'total_tokens': 0}, 'returned_immediately': False, 'task_name': None, 'co"
        "st_usd': None, 'metrics': {'model_seconds': 0.0, 'tool_seconds': 0.0, 'review_wait_sec"
        "onds': 0.0, 'retries': 0}}], 'exit_reason': <ExitReason.COMPLETED: 'completed'>, 'tota"
        "l_duration': datetime.timedelta(0), 'total_tool_calls': 0, 'usage': {'prompt_tokens': "
        "0, 'completion_tokens': 0, 'total_tokens': 0}, 'tool_metrics': {'tool\\\\ud800': {'cal"
        "ls': 2}, 'odd': <Custom>}, 'run_id': '', 'trace': None, 'cost_usd': None, 'loops': {'l"
        "\\\\ud800': {'iterations': 1, 'stopped_by': 'until', 'history': [{'w': {'raw': 'done "
        "\\\\ud800 with sk-proj-Abcdefghijklmnop0123456789QRSTuvwx and zero\\\\u200bwidth, bidi"
        "\\\\u202eflip, nul\\\\x00, line\\\\u2028sep, bom\\\\ufeff', 'parsed': {'k': ['v\\\\ud8"
        "00', {'deep': [1, 2.5, None, True]}], 'ok': 'caf\xe9'}, 'task_description': 'Read caf"
        "\\\\udce9.txt', 'agent_role': 'Reader \\\\ud800', 'duration': datetime.timedelta(secon"
        "ds=1, microseconds=500000), 'tool_calls': [{'name': 'tool0', 'arguments': '{\\"
        '"q\\": \\"caf\\\\udce9 sk-proj-Abcdefghijklmnop0123456789QRSTuvwx\\"}\', \'model_argum'
        "ents': None, 'output': 'found \\\\ud83d\\\\ude00 zero\\\\u200bwidth, bidi\\\\u202eflip"
        ", nul\\\\x00, line\\\\u2028sep, bom\\\\ufeff', 'is_success': True, 'duration': datetim"
        "e.timedelta(0), 'return_behavior': <ReturnBehavior.TO_LLM: 'to_llm'>, 'structured_outp"
        "ut': {'name\\\\udce9': ['caf\\\\udce9.txt'], 'n': 3}}, {'name': 'tool1', 'arguments': "
        '\'{\\"q\\": \\"caf\\\\udce9 sk-proj-Abcdefghijklmnop0123456789QRSTuvwx\\"}\', \'model_'
        "arguments': None, 'output': 'found \\\\ud83d\\\\ude00 zero\\\\u200bwidth, bidi\\\\u202"
        "eflip, nul\\\\x00, line\\\\u2028sep, bom\\\\ufeff', 'is_success': False, 'duration': d"
        "atetime.timedelta(microseconds=1000), 'return_behavior': <ReturnBehavior.TO_LLM: 'to_l"
        "lm'>, 'structured_output': <Custom>}, {'name': 'tool2', 'arguments': '{\\\"q"
        '\\": \\"caf\\\\udce9 sk-proj-Abcdefghijklmnop0123456789QRSTuvwx\\"}\', \'model_argumen'
        "ts': None, 'output': 'found \\\\ud83d\\\\ude00 zero\\\\u200bwidth, bidi\\\\u202eflip, "
        "nul\\\\x00, line\\\\u2028sep, bom\\\\ufeff', 'is_success': True, 'duration': datetime."
        "timedelta(microseconds=2000), 'return_behavior': <ReturnBehavior.TO_LLM: 'to_llm'>, 's"
        "tructured_output': {'set': {1}, 'obj': <Custom>, 'bytes': b'\\\\xff\\\\xfe'}}, {'name'"
        ": 'tool3', 'arguments': '{\\\"q\\\": \\\"caf\\\\udce9 sk-proj-Abcdefghijklmnop012345"
        "6789QRSTuvwx\\\"}', 'model_arguments': None, 'output': 'found \\\\ud83d\\\\ude00 "
        "zero\\\\u200bwidth, bidi\\\\u202eflip, nul\\\\x00, line\\\\u2028sep, bom\\\\ufeff', 'i"
        "s_success': False, 'duration': datetime.timedelta(microseconds=3000), 'return_behavior"
        "': <ReturnBehavior.TO_LLM: 'to_llm'>, 'structured_output': <Hostile>}, {'name': 'tool4"
        "', 'arguments': '{\\\"q\\\": \\\"caf\\\\udce9 sk-proj-Abcdefghijklmnop0123456789QRSTu"
        "vwx\\\"}', 'model_arguments': None, 'output': 'found \\\\ud83d\\\\ude00 zero\\\\u"
        "200bwidth, bidi\\\\u202eflip, nul\\\\x00, line\\\\u2028sep, bom\\\\ufeff', 'is_success"
        "': True, 'duration': datetime.timedelta(microseconds=4000), 'return_behavior': <Return"
        "Behavior.TO_LLM: 'to_llm'>, 'structured_output': <SavesItsOwn>}, {'name': 'tool5', 'ar"
        'guments\': \'{\\"q\\": \\"caf\\\\udce9 sk-proj-Abcdefghijklmnop0123456789QRSTuvwx\\"}'
        "', 'model_arguments': None, 'output': 'found \\\\ud83d\\\\ude00 zero\\\\u200bwidth, bi"
        "di\\\\u202eflip, nul\\\\x00, line\\\\u2028sep, bom\\\\ufeff', 'is_success': False, 'du"
        "ration': datetime.timedelta(microseconds=5000), 'return_behavior': <ReturnBehavior.TO_"
        "LLM: 'to_llm'>, 'structured_output': 'plain'}], 'llm_calls': 3, 'usage': {'prompt_toke"
        "ns': 0, 'completion_tokens': 0, 'total_tokens': 0}, 'returned_immediately': False, 'ta"
        "sk_name': 'read\\\\ud800', 'cost_usd': None, 'metrics': {'model_seconds': 0.0, 'tool_s"
        "econds': 0.0, 'review_wait_seconds': 0.0, 'retries': 0}}}]}}, 'graphs': {'g': {'path':"
        " ['a\\\\ud800'], 'stopped_by': 'end', 'outputs': {'a': {'raw': 'ok \\\\ud800', 'parsed"
        "': {'obj': <Custom>, 'k': '\\\\ud800'}, 'task_description': 'x', 'agent_role': 'y', 'd"
        "uration': datetime.timedelta(0), 'tool_calls': [], 'llm_calls': 0, 'usage': {'prompt_t"
        "okens': 0, 'completion_tokens': 0, 'total_tokens': 0}, 'returned_immediately': False, "
        "'task_name': None, 'cost_usd': None, 'metrics': {'model_seconds': 0.0, 'tool_seconds':"
        " 0.0, 'review_wait_seconds': 0.0, 'retries': 0}}}}}}\""
    ),
}
